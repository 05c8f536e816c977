// Fair permits against a real redis-server: waiters of several clients served in the order they
// first asked, a dead client's waiter passed over, a waiter that gives up gone from the queue.

#include <redisync/redisync.hpp>

#include "primitives/permits/protocol.hpp"
#include "support/lock_fixture.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <memory>

namespace asio = boost::asio;
using namespace redisync::test::lock_names;
namespace proto = redisync::detail::permits_protocol;

namespace {

std::int64_t queued(redis_server const& redis, std::string const& name) {
  return redis.command({"ZCARD", proto::queue_key_of(name)}).integer();
}

// Takes one permit in the background, notes its turn in `served` and gives it back.
asio::awaitable<void> take_and_note(redisync::permits p, int me, std::shared_ptr<std::vector<int>> served) {
  auto h = co_await p.acquire(1, asio::use_awaitable);
  served->push_back(me);
  co_await h.release(asio::use_awaitable);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(fair_permits)

BOOST_FIXTURE_TEST_CASE(waiters_of_several_clients_are_served_in_the_order_they_first_asked, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto const sem = c.new_owner().fair_permits("fp:order");
    co_await sem.try_set_permits(1, asio::use_awaitable);
    auto held_now = co_await sem.acquire(1, asio::use_awaitable);
    std::vector<std::unique_ptr<running_client>> others;
    auto served = std::make_shared<std::vector<int>>();
    for (int i = 0; i < 5; ++i) {
      others.push_back(std::make_unique<running_client>(ctx, fast_config(redis)));
      asio::co_spawn(ctx, take_and_note((**others.back()).new_owner().fair_permits("fp:order"), i, served),
                     asio::detached);
      // Each one's first attempt reaches Redis before the next one starts.
      auto const in_queue = [&, n = i + 1] { return queued(redis, "fp:order") == n; };
      co_await redisync::test::wait_until(in_queue, 5s);
    }
    co_await held_now.release(asio::use_awaitable);
    auto const all_served = [&] { return served->size() == 5u; };
    co_await redisync::test::wait_until(all_served, 10s);
    BOOST_TEST((*served == std::vector<int>{0, 1, 2, 3, 4}));
    for (auto& o : others) co_await o->stop();
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis, {"fp:order"});
  });
}

BOOST_FIXTURE_TEST_CASE(a_dead_clients_waiter_is_passed_over_within_about_a_liveness_period, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto const sem = c.new_owner().fair_permits("fp:dead");
    co_await sem.try_set_permits(1, asio::use_awaitable);
    auto held_now = co_await sem.acquire(1, asio::use_awaitable);
    // The first in line belongs to a client that stops without leaving the queue: a dead process.
    auto doomed = std::make_unique<running_client>(ctx, fast_config(redis));
    auto const dead_waiter = (**doomed).new_owner().fair_permits("fp:dead");
    asio::co_spawn(ctx, dead_waiter.acquire(1, asio::as_tuple(asio::use_awaitable)), asio::detached);
    auto const one = [&] { return queued(redis, "fp:dead") == 1; };
    co_await redisync::test::wait_until(one, 5s);
    auto const next = c.new_owner().fair_permits("fp:dead");
    auto served = std::make_shared<std::vector<int>>();
    asio::co_spawn(ctx, take_and_note(next, 1, served), asio::detached);
    auto const two = [&] { return queued(redis, "fp:dead") == 2; };
    co_await redisync::test::wait_until(two, 5s);
    co_await doomed->stop();
    auto const released = std::chrono::steady_clock::now();
    co_await held_now.release(asio::use_awaitable);
    auto const next_served = [&] { return served->size() == 1u; };
    co_await redisync::test::wait_until(next_served, 10s);
    auto const after = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - released);
    BOOST_TEST_MESSAGE("the live waiter was served " << after.count() << " ms after the release");
    BOOST_TEST((after < 3s));
    co_await c.flush_subscriptions(asio::use_awaitable);
    auto const queue_gone = [&] { return queued(redis, "fp:dead") == 0; };
    co_await redisync::test::wait_until(queue_gone, 5s);
    redisync::test::expect_nothing_left(redis, {"fp:dead"});
  });
}

BOOST_FIXTURE_TEST_CASE(a_waiter_that_gives_up_leaves_the_queue_at_once_and_the_next_is_called, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto const sem = c.new_owner().fair_permits("fp:leave");
    co_await sem.try_set_permits(1, asio::use_awaitable);
    auto held_now = co_await sem.acquire(1, asio::use_awaitable);
    running_client other{ctx, fast_config(redis)};
    auto const impatient = other->new_owner().fair_permits("fp:leave");
    auto served = std::make_shared<std::vector<int>>();
    // The first waiter gives up after 300 ms; the second, queued behind it, stays.
    auto give_up = [](redisync::permits p) -> asio::awaitable<void> {
      auto none = co_await p.try_acquire(1, 300ms, asio::use_awaitable);
      BOOST_TEST(!none.has_value());
    };
    asio::co_spawn(ctx, give_up(impatient), asio::detached);
    auto const one = [&] { return queued(redis, "fp:leave") == 1; };
    co_await redisync::test::wait_until(one, 5s);
    asio::co_spawn(ctx, take_and_note(other->new_owner().fair_permits("fp:leave"), 1, served), asio::detached);
    auto const two = [&] { return queued(redis, "fp:leave") == 2; };
    co_await redisync::test::wait_until(two, 5s);
    auto const left = [&] { return queued(redis, "fp:leave") == 1; };
    co_await redisync::test::wait_until(left, 5s);
    co_await held_now.release(asio::use_awaitable);
    auto const next_served = [&] { return served->size() == 1u; };
    co_await redisync::test::wait_until(next_served, 5s);
    co_await other.stop();
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis, {"fp:leave"});
  });
}

BOOST_AUTO_TEST_SUITE_END()
