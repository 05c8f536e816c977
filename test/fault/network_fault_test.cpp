// Network faults between the clients and Redis, through a TCP fault proxy: latency, a blackhole
// (traffic stalled) one way or both, resets, connections cut after some bytes, reads slowed to a trickle, refused
// connections. Under load (stress processes, checked from their histories) and for one client
// watched closely (a half-open connection).

#include "support/connection_fixture.hpp"
#include "support/fault_proxy.hpp"
#include "support/fault_scenario.hpp"
#include "support/lock_fixture.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <thread>

using namespace std::chrono_literals;
using redisync::process::redis_server;
using redisync::test::fault_proxy;
using redisync::test::run_with_fault;

namespace {

// The fault lasts longer than the stress processes' lease (600 ms), so renewals, releases and
// hand-offs all meet it, and longer than two health-check intervals (2 s each) for the faults that
// leave a connection open and silent.
void hold_fault(fault_proxy& proxy, fault_proxy::faults f, std::chrono::milliseconds d) {
  proxy.set(f);
  std::this_thread::sleep_for(d);
  proxy.clear();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(network_faults)

BOOST_AUTO_TEST_CASE(latency_of_50_ms_each_way_slows_everyone_and_breaks_nothing) {
  redis_server redis;
  fault_proxy proxy{redis.port()};
  run_with_fault(redis, {"latency", proxy.url(), [&] { hold_fault(proxy, {.latency = 50ms}, 1500ms); }});
}

BOOST_AUTO_TEST_CASE(a_blackhole_both_ways_is_noticed_by_the_health_check_and_holds_end_in_time) {
  redis_server redis;
  fault_proxy proxy{redis.port()};
  run_with_fault(redis, {"blackhole", proxy.url(), [&] {
                           hold_fault(proxy, {.stalled = fault_proxy::both}, 5s);
                         }});
}

BOOST_AUTO_TEST_CASE(replies_held_back_past_the_health_check_make_outcomes_unknown_and_they_are_resolved) {
  redis_server redis;
  fault_proxy proxy{redis.port()};
  run_with_fault(redis, {"held-replies", proxy.url(), [&] {
                           hold_fault(proxy, {.stalled = fault_proxy::to_client}, 5s);
                         }});
}

BOOST_AUTO_TEST_CASE(every_connection_reset_under_load_is_survived) {
  redis_server redis;
  fault_proxy proxy{redis.port()};
  run_with_fault(redis, {"reset", proxy.url(), [&] {
                           for (int i = 0; i < 5; ++i) {
                             proxy.reset_all();
                             std::this_thread::sleep_for(300ms);
                           }
                         }});
}

BOOST_AUTO_TEST_CASE(connections_cut_in_the_middle_of_a_command_are_survived) {
  redis_server redis;
  fault_proxy proxy{redis.port()};
  // Each new connection carries 700 bytes to Redis, then is cut: mid-command, mid-handshake.
  run_with_fault(redis, {"cut", proxy.url(), [&] {
                           hold_fault(proxy, {.cut_after = 700}, 1500ms);
                           proxy.reset_all();  // connections made during the fault still have their limit
                         }});
}

BOOST_AUTO_TEST_CASE(reads_slowed_to_a_trickle_and_refused_connections_are_survived) {
  redis_server redis;
  fault_proxy proxy{redis.port()};
  run_with_fault(redis, {"trickle", proxy.url(), [&] {
                           hold_fault(proxy, {.trickle = 16}, 1500ms);
                           proxy.set({.refuse = true});
                           proxy.reset_all();
                           std::this_thread::sleep_for(1500ms);
                           proxy.clear();
                         }});
}

// One client watched closely while its connection goes silent without closing.
// Renewals reach Redis but their replies do not come back: Redis keeps extending the lease while the
// client gives the hold up at its deadline. The client then releases it there (its field is still
// there), instead of leaving the lock held by no one for another lease.
BOOST_AUTO_TEST_CASE(a_hold_given_up_for_lost_is_released_where_the_server_still_has_it) {
  redis_server redis;
  fault_proxy proxy{redis.port()};
  auto cfg = redisync::config::from_url(proxy.url());
  cfg.health_check_interval = 20s;  // the connection stays: requests go out, replies do not come
  cfg.watchdog_lease = 3s;
  redisync::test::run_async([&](boost::asio::io_context& ctx) -> boost::asio::awaitable<void> {
    redisync::test::running_client c{ctx, cfg};
    auto h = co_await c->make_lock("given-up").acquire(boost::asio::use_awaitable);
    proxy.set({.stalled = fault_proxy::to_client});
    auto [ec, how] = co_await h.wait_lost(boost::asio::as_tuple(boost::asio::use_awaitable));
    BOOST_TEST((!ec && how == redisync::hold_status::lost));
    auto const lost_at = std::chrono::steady_clock::now();
    // Its renewals ran all the while: left alone, the lock would stay some 3 s more.
    co_await redisync::test::wait_until([&] { return redis.command({"EXISTS", "given-up"}).integer() == 0; }, 1500ms);
    BOOST_TEST_MESSAGE("the lock was free "
                       << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - lost_at).count()
                       << " ms after the hold was given up");
    proxy.clear();
    co_await c.stop();
  }, std::chrono::seconds{30});
}

BOOST_AUTO_TEST_CASE(a_half_open_connection_is_noticed_within_the_health_check_and_nothing_hangs) {
  redis_server redis;
  fault_proxy proxy{redis.port()};
  auto cfg = redisync::config::from_url(proxy.url());
  cfg.health_check_interval = 300ms;
  cfg.watchdog_lease = 1500ms;
  cfg.connection_wait_limit = 1s;
  cfg.reconnect_delay_max = 200ms;
  std::vector<redisync::event_kind> events;
  cfg.on_event = [&](redisync::event const& e) { events.push_back(e.kind); };
  redisync::test::run_async([&](boost::asio::io_context& ctx) -> boost::asio::awaitable<void> {
    redisync::test::running_client c{ctx, cfg};
    auto h = co_await c->make_lock("half-open").acquire(boost::asio::use_awaitable);
    proxy.set({.stalled = fault_proxy::both});
    auto const t0 = std::chrono::steady_clock::now();
    // A request written into the silence: its outcome is unknown once the connection is given up.
    auto [ec, r] = co_await c->exec(redisync::test::command("PING"),
                                    boost::asio::as_tuple(boost::asio::use_awaitable));
    auto const noticed = std::chrono::steady_clock::now() - t0;
    BOOST_TEST((ec == redisync::error::ambiguous), ec.message());
    // Silence for a full interval after a PING that itself went out after an interval of silence.
    BOOST_TEST((noticed < 3s), std::chrono::duration_cast<std::chrono::milliseconds>(noticed).count() << " ms");
    auto const told = [&] {
      return std::find(events.begin(), events.end(), redisync::event_kind::disconnected) != events.end();
    };
    co_await redisync::test::wait_until(told, 1s);
    // The proxy still accepts and then drops everything: new connections fail their handshake.
    auto [aec, other] = co_await c->make_lock("elsewhere").acquire(boost::asio::as_tuple(boost::asio::use_awaitable));
    BOOST_TEST((aec == redisync::error::not_connected), aec.message());
    // The hold is lost at its deadline, not before and not never.
    auto [lost, how] = co_await h.wait_lost(boost::asio::as_tuple(boost::asio::use_awaitable));
    BOOST_TEST((!lost && how == redisync::hold_status::lost));
    BOOST_TEST((h.status() == redisync::hold_status::lost));
    BOOST_TEST((std::chrono::steady_clock::now() >= h.valid_until()));
    proxy.clear();
    co_await c.stop();
  }, std::chrono::seconds{30});
}

BOOST_AUTO_TEST_SUITE_END()
