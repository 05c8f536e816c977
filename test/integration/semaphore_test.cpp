// The Redisson semaphore against a real redis-server: Redisson's layout (the string holds the
// permits free), waiters woken by releases, and typed errors for bad arguments.

#include <redisync/redisync.hpp>

#include "support/lock_fixture.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

namespace asio = boost::asio;
using namespace redisync::test::lock_names;

namespace {

// An acquire started in the background; `done` once it took its permits.
struct background_take {
  explicit background_take(asio::io_context& ctx) : done{ctx.get_executor()} {}
  error_code error;
  redisync::test::event done;
};

std::shared_ptr<background_take> take_in_background(asio::io_context& ctx, redisync::semaphore s, std::int64_t k) {
  auto state = std::make_shared<background_take>(ctx);
  auto run = [](std::shared_ptr<background_take> t, redisync::semaphore s, std::int64_t k) -> asio::awaitable<void> {
    auto [ec] = co_await s.acquire(k, asio::as_tuple(asio::use_awaitable));
    t->error = ec;
    t->done.notify();
  };
  asio::co_spawn(ctx, run(state, std::move(s), k), asio::detached);
  return state;
}

std::string free_on_server(redis_server const& redis, std::string const& name) {
  return std::string{redis.command({"GET", name}).text()};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(redisson_semaphore)

BOOST_FIXTURE_TEST_CASE(permits_are_taken_and_given_back_in_redissons_layout, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto const sem = c.new_owner().semaphore("sc:a");
    BOOST_TEST(co_await sem.try_set_permits(3, asio::use_awaitable));
    BOOST_TEST(!co_await sem.try_set_permits(7, asio::use_awaitable));
    BOOST_TEST(free_on_server(redis, "sc:a") == "3");
    co_await sem.acquire(2, asio::use_awaitable);
    BOOST_TEST(free_on_server(redis, "sc:a") == "1");
    BOOST_TEST(!co_await sem.try_acquire(2, 0ms, asio::use_awaitable));
    BOOST_TEST(co_await sem.try_acquire(1, 0ms, asio::use_awaitable));
    BOOST_TEST(co_await sem.available_permits(asio::use_awaitable) == 0);
    co_await sem.release(3, asio::use_awaitable);
    BOOST_TEST(co_await sem.available_permits(asio::use_awaitable) == 3);
    BOOST_TEST(co_await sem.drain_permits(asio::use_awaitable) == 3);
    BOOST_TEST(free_on_server(redis, "sc:a") == "0");
    co_await sem.release(3, asio::use_awaitable);  // drained permits are the owner's to give back
    BOOST_TEST(co_await sem.add_permits(2, asio::use_awaitable) == 5);
    BOOST_TEST(co_await sem.add_permits(-1, asio::use_awaitable) == 4);
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis, {"sc:a"});
  });
}

BOOST_FIXTURE_TEST_CASE(a_release_of_k_permits_lets_k_waiters_in, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto const holder = c.new_owner().semaphore("sc:wake");
    co_await holder.try_set_permits(3, asio::use_awaitable);
    co_await holder.acquire(3, asio::use_awaitable);
    std::vector<std::shared_ptr<background_take>> waiters;
    for (int i = 0; i < 3; ++i) waiters.push_back(take_in_background(ctx, c.new_owner().semaphore("sc:wake"), 1));
    auto const all_waiting = [&] { return c.metrics().waiters == 3; };
    co_await redisync::test::wait_until(all_waiting, 5s);
    co_await holder.release(2, asio::use_awaitable);
    BOOST_TEST(co_await waiters[0]->done.wait(5s));
    BOOST_TEST(co_await waiters[1]->done.wait(5s));
    BOOST_TEST(!waiters[2]->done.is_set());
    co_await holder.release(1, asio::use_awaitable);
    BOOST_TEST(co_await waiters[2]->done.wait(5s));
    for (auto const& w : waiters) BOOST_TEST(!w->error);
    BOOST_TEST(free_on_server(redis, "sc:wake") == "0");
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis, {"sc:wake"});
  });
}

BOOST_FIXTURE_TEST_CASE(a_waiter_takes_permits_that_appear_without_a_message, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto const sem = c.new_owner().semaphore("sc:quiet");
    co_await sem.try_set_permits(0, asio::use_awaitable);
    auto waiter = take_in_background(ctx, sem, 1);
    auto const waiting = [&] { return c.metrics().waiters == 1; };
    co_await redisync::test::wait_until(waiting, 5s);
    redis.command({"SET", "sc:quiet", "1"});  // nobody publishes: the waiter's poll finds it
    BOOST_TEST(co_await waiter->done.wait(5s));
    BOOST_TEST(!waiter->error);
    co_await sem.release(1, asio::use_awaitable);
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis, {"sc:quiet"});
  });
}

BOOST_FIXTURE_TEST_CASE(bad_arguments_and_wrong_types_get_typed_errors_and_change_nothing, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto const sem = c.new_owner().semaphore("sc:bad");
    co_await sem.try_set_permits(2, asio::use_awaitable);
    auto [zero] = co_await sem.acquire(0, tuple_awaitable);
    BOOST_TEST((zero == error::invalid_argument));
    auto [absurd, taken] = co_await sem.try_acquire(1, std::chrono::hours{24 * 366}, tuple_awaitable);
    BOOST_TEST((absurd == error::invalid_argument));
    auto [not_taken] = co_await sem.release(1, tuple_awaitable);
    BOOST_TEST((not_taken == error::not_owner));
    co_await sem.acquire(1, asio::use_awaitable);
    auto [more_than_taken] = co_await sem.release(2, tuple_awaitable);
    BOOST_TEST((more_than_taken == error::not_owner));
    // Another owner took nothing, whatever this one holds.
    auto [other] = co_await c.new_owner().semaphore("sc:bad").release(1, tuple_awaitable);
    BOOST_TEST((other == error::not_owner));
    auto [negative, set] = co_await c.new_owner().semaphore("sc:new").try_set_permits(-1, tuple_awaitable);
    BOOST_TEST((negative == error::invalid_argument));
    BOOST_TEST(free_on_server(redis, "sc:bad") == "1");
    co_await sem.release(1, asio::use_awaitable);
    redis.command({"HSET", "sc:hash", "f", "1"});
    auto [wrong, got] = co_await c.new_owner().semaphore("sc:hash").try_acquire(1, 0ms, tuple_awaitable);
    BOOST_TEST((wrong == error::wrong_type));
    auto [wrong_count, count] = co_await c.new_owner().semaphore("sc:hash").available_permits(tuple_awaitable);
    BOOST_TEST((wrong_count == error::wrong_type));
    redisync::test::expect_nothing_left(redis, {"sc:bad", "sc:hash"});
  });
}

BOOST_AUTO_TEST_SUITE_END()
