// A count-down latch through server faults: a restart without persistence loses the count, and
// every waiter finds the latch open once it is back; a server stopped (SIGSTOP) cannot hold a
// bounded wait much past its bound (a look on the wire ends when the health check gives the
// connection up, two intervals of silence), and waiters that outlast the pause still open when the
// count reaches zero afterwards.

#include <redisync/redisync.hpp>

#include "testbed/redis_server.hpp"
#include "support/latch_waits.hpp"
#include "support/lock_fixture.hpp"

#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <csignal>

namespace asio = boost::asio;
using namespace redisync::test::lock_names;
using redisync::test::wait_in_background;
using redisync::test::wait_until;

constexpr auto use_awaitable = asio::use_awaitable;

BOOST_AUTO_TEST_SUITE(latch_server_faults)

BOOST_AUTO_TEST_CASE(a_restart_without_persistence_opens_the_latch_for_every_waiter) {
  redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, fast_config(redis)};
    auto const l = c->latch("latch:restart");
    BOOST_TEST(co_await l.try_set_count(2, use_awaitable));
    std::vector<std::shared_ptr<redisync::test::background_wait>> waits;
    for (int i = 0; i < 3; ++i) waits.push_back(wait_in_background(ctx, l, 30s));
    co_await wait_until([&] { return c->metrics().waiters == 3; }, 5s);
    redis.kill_hard();
    redis.start();
    // The count is gone with the data: the first waiter's look after the reconnect finds the
    // latch open and wakes the others.
    for (auto const& w : waits) {
      BOOST_TEST_REQUIRE(co_await w->done.wait(15s));
      BOOST_TEST(!w->error);
      BOOST_TEST(w->open);
    }
    BOOST_TEST(co_await l.count(use_awaitable) == 0);
    co_await c.stop();
  });
}

BOOST_AUTO_TEST_CASE(a_stopped_server_holds_no_wait_past_its_bound_and_waiters_open_after_it_resumes) {
  redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, fast_config(redis)};
    auto const l = c->latch("latch:stopped");
    BOOST_TEST(co_await l.try_set_count(1, use_awaitable));
    auto const patient = wait_in_background(ctx, l, 60s);
    co_await wait_until([&] { return c->metrics().waiters == 1; }, 5s);
    redis.send_signal(SIGSTOP);
    auto const bounded_from = std::chrono::steady_clock::now();
    auto const bounded = wait_in_background(ctx, l, 1s);
    BOOST_TEST_REQUIRE(co_await bounded->done.wait(10s));
    BOOST_TEST(!bounded->open);  // it could not look, so it cannot say open
    BOOST_TEST_MESSAGE("bounded wait ended after "
                       << std::chrono::duration_cast<std::chrono::milliseconds>(bounded->at - bounded_from).count()
                       << " ms: " << bounded->error.message());
    auto const health = c->cfg().health_check_interval;
    BOOST_TEST((bounded->at - bounded_from < 1s + 2 * health + 2s));
    redis.send_signal(SIGCONT);
    BOOST_TEST(!patient->done.is_set());
    // Counted down once the server answers again: the patient waiter opens.
    auto [ec, left] = co_await l.count_down(asio::as_tuple(use_awaitable));
    BOOST_TEST(!ec);
    BOOST_TEST(left == 0);
    BOOST_TEST_REQUIRE(co_await patient->done.wait(15s));
    BOOST_TEST(!patient->error);
    BOOST_TEST(patient->open);
    co_await c.stop();
  });
}

BOOST_AUTO_TEST_SUITE_END()
