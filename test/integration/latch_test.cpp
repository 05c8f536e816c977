// The count-down latch against a real redis-server: Redisson's layout (the string holds the count),
// every waiter woken at once when it reaches zero, a waiter that finds it open by itself when no
// message comes, bounds, and typed errors for bad arguments and wrong types.

#include <redisync/redisync.hpp>

#include "support/latch_waits.hpp"
#include "support/lock_fixture.hpp"

#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

namespace asio = boost::asio;
using namespace redisync::test::lock_names;
using redisync::test::wait_in_background;

BOOST_AUTO_TEST_SUITE(count_down_latch)

BOOST_FIXTURE_TEST_CASE(the_count_lives_in_redissons_layout_and_ends_with_the_key_gone, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto const l = c.latch("latch:a");
    BOOST_TEST(co_await l.count(asio::use_awaitable) == 0);  // no key: open
    BOOST_TEST(co_await l.try_set_count(2, asio::use_awaitable));
    BOOST_TEST(!co_await l.try_set_count(5, asio::use_awaitable));
    BOOST_TEST(redis.command({"GET", "latch:a"}).text() == "2");
    BOOST_TEST(co_await l.count_down(asio::use_awaitable) == 1);
    BOOST_TEST(co_await l.count(asio::use_awaitable) == 1);
    BOOST_TEST(co_await l.count_down(asio::use_awaitable) == 0);
    BOOST_TEST(redis.command({"EXISTS", "latch:a"}).integer() == 0);
    BOOST_TEST(co_await l.count_down(asio::use_awaitable) == 0);  // open stays open
    BOOST_TEST(co_await l.wait(0ms, asio::use_awaitable));
    redisync::test::expect_nothing_left(redis, {"latch:a"});
  });
}

BOOST_FIXTURE_TEST_CASE(reaching_zero_wakes_every_waiter_at_once, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto const l = c.latch("latch:wake");
    co_await l.try_set_count(3, asio::use_awaitable);
    std::vector<std::shared_ptr<redisync::test::background_wait>> waiters;
    for (int i = 0; i < 5; ++i) waiters.push_back(wait_in_background(ctx, l, 20s));
    auto const all_waiting = [&] { return c.metrics().waiters == 5; };
    co_await redisync::test::wait_until(all_waiting, 5s);
    co_await l.count_down(asio::use_awaitable);
    co_await l.count_down(asio::use_awaitable);
    for (auto const& w : waiters) BOOST_TEST(!w->done.is_set());
    auto const opened = std::chrono::steady_clock::now();
    co_await l.count_down(asio::use_awaitable);
    for (auto const& w : waiters) {
      BOOST_TEST(co_await w->done.wait(5s));
      BOOST_TEST(!w->error);
      BOOST_TEST(w->open);
    }
    // Woken by the message, not by a waiter's poll (once a second): with a generous margin.
    BOOST_TEST((std::chrono::steady_clock::now() - opened < 700ms));
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis, {"latch:wake"});
  });
}

BOOST_FIXTURE_TEST_CASE(waiters_find_the_latch_open_when_no_message_comes, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto const l = c.latch("latch:quiet");
    co_await l.try_set_count(1, asio::use_awaitable);
    std::vector<std::shared_ptr<redisync::test::background_wait>> waiters;
    for (int i = 0; i < 3; ++i) waiters.push_back(wait_in_background(ctx, l, 20s));
    auto const all_waiting = [&] { return c.metrics().waiters == 3; };
    co_await redisync::test::wait_until(all_waiting, 5s);
    redis.command({"DEL", "latch:quiet"});  // nobody publishes: the first waiter's poll finds it
    for (auto const& w : waiters) {
      BOOST_TEST(co_await w->done.wait(5s));
      BOOST_TEST(w->open);
    }
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis, {"latch:quiet"});
  });
}

BOOST_FIXTURE_TEST_CASE(a_bounded_wait_ends_closed_at_its_bound, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto const l = c.latch("latch:bound");
    co_await l.try_set_count(1, asio::use_awaitable);
    BOOST_TEST(!co_await l.wait(0ms, asio::use_awaitable));
    auto const start = std::chrono::steady_clock::now();
    auto [ec, open] = co_await l.wait(300ms, tuple_awaitable);
    auto const took = std::chrono::steady_clock::now() - start;
    BOOST_TEST(!ec);
    BOOST_TEST(!open);
    BOOST_TEST((took >= 300ms));
    BOOST_TEST((took < 5s));
    BOOST_TEST(c.metrics().waiters == 0u);
    co_await l.count_down(asio::use_awaitable);
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis, {"latch:bound"});
  });
}

BOOST_FIXTURE_TEST_CASE(bad_arguments_and_wrong_types_get_typed_errors_and_change_nothing, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto const l = c.latch("latch:bad");
    auto [zero, set0] = co_await l.try_set_count(0, tuple_awaitable);
    BOOST_TEST((zero == error::invalid_argument));
    auto [negative, set1] = co_await l.try_set_count(-3, tuple_awaitable);
    BOOST_TEST((negative == error::invalid_argument));
    auto [absurd, open] = co_await l.wait(std::chrono::hours{24 * 366}, tuple_awaitable);
    BOOST_TEST((absurd == error::invalid_argument));
    auto [before, open2] = co_await l.wait(-1ms, tuple_awaitable);
    BOOST_TEST((before == error::invalid_argument));
    auto [unnamed, n] = co_await c.latch("").count(tuple_awaitable);
    BOOST_TEST((unnamed == error::invalid_argument));
    redis.command({"HSET", "latch:hash", "f", "1"});
    auto const h = c.latch("latch:hash");
    auto [wrong_wait, w] = co_await h.wait(0ms, tuple_awaitable);
    BOOST_TEST((wrong_wait == error::wrong_type));
    auto [wrong_down, d] = co_await h.count_down(tuple_awaitable);
    BOOST_TEST((wrong_down == error::wrong_type));
    auto [wrong_set, s] = co_await h.try_set_count(1, tuple_awaitable);
    BOOST_TEST((wrong_set == error::wrong_type));
    redis.command({"SET", "latch:text", "ten"});
    auto [no_count, t] = co_await c.latch("latch:text").count_down(tuple_awaitable);
    BOOST_TEST((no_count == error::wrong_type));
    BOOST_TEST(redis.command({"GET", "latch:text"}).text() == "ten");  // left as it was
    BOOST_TEST(redis.command({"HGET", "latch:hash", "f"}).text() == "1");
    redis.command({"DEL", "latch:hash", "latch:text"});
    redisync::test::expect_nothing_left(redis, {"latch:bad", "latch:hash", "latch:text"});
  });
}

BOOST_AUTO_TEST_SUITE_END()
