// Locks through Redis Sentinel: the master found by asking the Sentinels, followed through a
// failover and a killed master; WAIT met and failed, for every primitive; a wrong master name
// explained.

#include "testbed/redis_sentinel.hpp"
#include "support/fault_scenario.hpp"
#include "support/lock_fixture.hpp"

#include <redisync/redisync.hpp>

#include <algorithm>
#include <csignal>

namespace asio = boost::asio;
using namespace redisync::test::lock_names;
using redisync::process::redis_sentinel_set;

namespace {

// Tries until held, for at most `limit`; the time it took.
asio::awaitable<std::pair<std::optional<held>, std::chrono::milliseconds>> acquire_eventually(
    redisync::lock l, std::chrono::milliseconds limit) {
  auto const start = std::chrono::steady_clock::now();
  std::optional<held> out;
  while (!out && std::chrono::steady_clock::now() - start < limit) {
    auto [ec, h] = co_await l.try_acquire(500ms, tuple_awaitable);
    if (!ec && h) out = std::move(*h);
    if (ec) co_await redisync::test::sleep_for(50ms);
  }
  co_return std::pair{std::move(out), std::chrono::duration_cast<std::chrono::milliseconds>(
                                          std::chrono::steady_clock::now() - start)};
}

// Each acquire waits for the set's one replica, at most 300 ms.
redisync::config waiting_for_the_replica(redis_sentinel_set const& set) {
  auto cfg = fast_config(set.url());
  cfg.wait_replicas = 1;
  cfg.wait_replicas_timeout = 300ms;
  return cfg;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(sentinel_locks, *boost::unit_test::label("cluster"))

BOOST_AUTO_TEST_CASE(locks_follow_the_master_through_a_sentinel_failover_with_tokens_rising) {
  redis_sentinel_set set;
  auto cfg = fast_config(set.url());
  cfg.watchdog_lease = 3s;
  std::vector<std::pair<redisync::event_kind, std::string>> connection_events;
  cfg.on_event = [&](redisync::event const& e) {
    if (e.kind == redisync::event_kind::disconnected || e.kind == redisync::event_kind::connect_failed) {
      connection_events.emplace_back(e.kind, std::string{e.detail});
    }
  };
  run_client(cfg, [&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto me = c.new_owner();
    auto h = co_await me.lock("kept").acquire(asio::use_awaitable);
    auto const first = h.token();
    auto const old_port = set.current_master_port();
    auto const connects = c.metrics().connects;
    auto const failed_over = std::chrono::steady_clock::now();
    set.failover();
    BOOST_TEST(set.current_master_port() != old_port);
    // The old master stays a writable master for seconds: the Sentinel's +switch-master hint is
    // what moves the client (a lock taken there meanwhile would be lost: replication is async).
    co_await redisync::test::wait_until([&] { return c.metrics().connects > connects; }, 5s);
    // The session to the old master was closed to follow the new one: said as such, with no
    // failed handshake and no TLS hint.
    auto const followed = std::ranges::find_if(connection_events, [](auto const& e) {
      bool const why = e.second.find("+switch-master") != std::string::npos || e.second.find("READONLY") != std::string::npos;
      return e.first == redisync::event_kind::disconnected && why;
    });
    BOOST_TEST((followed != connection_events.end()));
    for (auto const& [kind, detail] : connection_events) BOOST_TEST(detail.find("TLS") == std::string::npos, detail);
    BOOST_TEST_MESSAGE("reconnected "
                       << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                                failed_over).count()
                       << " ms after the failover began");
    auto [after, took] = co_await acquire_eventually(me.lock("after-failover"), 10s);
    BOOST_TEST_REQUIRE(after.has_value());
    BOOST_TEST_MESSAGE("a new lock on the new master after " << took.count() << " ms");
    co_await redisync::test::wait_until(
        [&] { return !set.master().command({"HGET", "after-failover", after->owner_id()}).is_null(); }, 5s);
    BOOST_TEST(!set.master().command({"HGET", "after-failover", after->owner_id()}).is_null());
    co_await redisync::test::sleep_for(4s);  // renewals of "kept" found the new master
    BOOST_TEST((h.status() == hold_status::held));
    co_await h.release(asio::use_awaitable);
    auto again = co_await me.lock("kept").acquire(asio::use_awaitable);
    BOOST_TEST(again.token() > first);
    co_await again.release(asio::use_awaitable);
    co_await after->release(asio::use_awaitable);
  }, std::chrono::seconds{90});
}

// The releases of locks of every exclusive kind and of leased permits go to the old master after
// the replica took over (the sentinels have not told anyone yet): the old master acknowledges them,
// the new one never sees them. Once the client follows the new master, it makes them again there,
// instead of leaving the locks held and the permits taken by no one for the rest of their leases.
BOOST_AUTO_TEST_CASE(releases_the_old_master_acknowledged_after_the_promotion_are_made_again_on_the_new_one) {
  redis_sentinel_set set;
  auto cfg = fast_config(set.url());
  std::vector<std::string> made_again;
  cfg.on_event = [&](redisync::event const& e) {
    if (e.kind == redisync::event_kind::release_made_again) made_again.emplace_back(e.lock);
  };
  std::string const leases_key = "redisync_permits_leases:{handed-permits}";
  std::vector<std::string> const locks{"handed", "handed-fair", "handed-write"};
  run_client(cfg, [&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto const me = c.new_owner();
    auto const permits = me.permits("handed-permits");
    bool const set_up = co_await permits.try_set_permits(1, asio::use_awaitable);
    BOOST_TEST_REQUIRE(set_up);
    std::vector<redisync::held> holds;
    holds.push_back(co_await me.lock("handed").acquire(asio::use_awaitable));
    holds.push_back(co_await me.fair_lock("handed-fair").acquire(asio::use_awaitable));
    holds.push_back(co_await me.read_write_lock("handed-write").write().acquire(asio::use_awaitable));
    auto p = co_await permits.acquire(1, asio::use_awaitable);
    auto& old_master = set.master();
    auto& replica = set.replica();
    auto const exists_on = [&](auto const& node) {
      int n = 0;
      for (auto const& name : locks) n += static_cast<int>(node.command({"EXISTS", name}).integer());
      return n + static_cast<int>(node.command({"ZCARD", leases_key}).integer());
    };
    co_await redisync::test::wait_until([&] { return exists_on(replica) == 4; }, 5s);
    auto& promoted = set.promote_without_sentinels();
    for (auto& h : holds) co_await h.release(asio::use_awaitable);
    co_await p.release(asio::use_awaitable);
    for (auto& h : holds) BOOST_TEST((h.status() == hold_status::released));
    BOOST_TEST((p.status() == hold_status::released));
    BOOST_TEST(exists_on(old_master) == 0);
    BOOST_TEST_REQUIRE(exists_on(promoted) == 4);  // the releases it never saw
    set.name_master(promoted);
    auto const followed_at = std::chrono::steady_clock::now();
    old_master.command({"CLIENT", "KILL", "TYPE", "normal"});  // as the sentinels do on a reconfiguration
    co_await redisync::test::wait_until([&] { return exists_on(promoted) == 0; }, 5s);
    BOOST_TEST_MESSAGE("the locks and the permits were free on the new master "
                       << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                                followed_at).count()
                       << " ms after the client was sent to it");
    // The client tells once the reply has come, which may be after the server's state shows it.
    co_await redisync::test::wait_until([&] { return made_again.size() >= 4; }, 5s);
    std::ranges::sort(made_again);
    std::string said;
    for (auto const& name : made_again) said += " " + name;
    BOOST_TEST(made_again == (std::vector<std::string>{"handed", "handed-fair", "handed-permits", "handed-write"}),
               "made again:" << said);
    auto again = co_await me.lock("handed").try_acquire(1s, asio::use_awaitable);
    BOOST_TEST_REQUIRE(again.has_value());
    co_await again->release(asio::use_awaitable);
    auto permit_again = co_await permits.try_acquire(1, 1s, asio::use_awaitable);
    BOOST_TEST_REQUIRE(permit_again.has_value());
    co_await permit_again->release(asio::use_awaitable);
  }, std::chrono::seconds{90});
}

BOOST_AUTO_TEST_CASE(after_the_master_is_killed_locks_are_available_within_down_after_plus_failover_timeout) {
  redis_sentinel_set set;
  run_client(fast_config(set.url()), [&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto me = c.new_owner();
    auto before = co_await me.lock("survivor").acquire(asio::use_awaitable);
    co_await before.release(asio::use_awaitable);
    set.master().kill_hard();
    auto [after, took] = co_await acquire_eventually(me.lock("survivor"), 20s);
    BOOST_TEST_MESSAGE("available again after " << took.count() << " ms (down-after 2000 ms)");
    BOOST_TEST_REQUIRE(after.has_value());
    BOOST_TEST(took < 2s + 10s + 1s);  // down-after + failover-timeout + 1 s
    BOOST_TEST(after->token() > before.token());
    co_await after->release(asio::use_awaitable);
  }, std::chrono::seconds{90});
}

BOOST_AUTO_TEST_CASE(wait_met_holds_and_wait_failed_undoes_the_hold_with_a_typed_error) {
  redis_sentinel_set set;
  run_client(waiting_for_the_replica(set), [&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto me = c.new_owner();
    auto h = co_await me.lock("replicated").acquire(asio::use_awaitable);
    BOOST_TEST(!set.replica().command({"HGET", "replicated", h.owner_id()}).is_null());
    co_await h.release(asio::use_awaitable);
    set.replica().send_signal(SIGSTOP);
    auto [ec, lost] = co_await me.lock("unreplicated").acquire(tuple_awaitable);
    set.replica().send_signal(SIGCONT);
    BOOST_TEST((ec == error::not_replicated));
    BOOST_TEST(set.master().command({"EXISTS", "unreplicated"}).integer() == 0);  // undone
  });
}

// Every primitive's acquire waits for the replicas, not only the locks': a semaphore's permits,
// leased permits and a leadership that too few replicas acknowledged are given back (the
// leadership resigned).
BOOST_AUTO_TEST_CASE(wait_failed_gives_back_semaphore_permits_leased_permits_and_leadership) {
  redis_sentinel_set set;
  run_client(waiting_for_the_replica(set), [&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto me = c.new_owner();
    auto const sem = me.semaphore("sem");
    auto const leased = me.permits("leased");
    auto const boss = c.election("boss");
    bool const sem_set = co_await sem.try_set_permits(2, asio::use_awaitable);
    bool const leased_set = co_await leased.try_set_permits(2, asio::use_awaitable);
    BOOST_TEST(sem_set);
    BOOST_TEST(leased_set);
    // Met: the grants are on the replica when the acquires answer.
    co_await sem.acquire(1, asio::use_awaitable);
    BOOST_TEST(set.replica().command({"GET", "sem"}).text() == "1");
    co_await sem.release(1, asio::use_awaitable);
    auto permit = co_await leased.acquire(1, asio::use_awaitable);
    BOOST_TEST(set.replica().command({"HGET", "redisync_permits_holders:{leased}", "used"}).text() == "1");
    co_await permit.release(asio::use_awaitable);
    auto leader = co_await boss.campaign("first", asio::use_awaitable);
    BOOST_TEST(set.replica().command({"EXISTS", "redisync_election:{boss}"}).integer() == 1);
    co_await leader.release(asio::use_awaitable);
    // Failed: each acquire ends with not_replicated, and the master has nothing of it.
    set.replica().send_signal(SIGSTOP);
    auto [sem_ec] = co_await sem.acquire(1, tuple_awaitable);
    auto [leased_ec, no_permit] = co_await leased.acquire(1, tuple_awaitable);
    auto [boss_ec, no_leader] = co_await boss.campaign("second", tuple_awaitable);
    set.replica().send_signal(SIGCONT);
    BOOST_TEST((sem_ec == error::not_replicated));
    BOOST_TEST(set.master().command({"GET", "sem"}).text() == "2");
    BOOST_TEST((leased_ec == error::not_replicated));
    BOOST_TEST(set.master().command({"EXISTS", "redisync_permits_holders:{leased}"}).integer() == 0);
    BOOST_TEST((boss_ec == error::not_replicated));
    BOOST_TEST(set.master().command({"EXISTS", "redisync_election:{boss}"}).integer() == 0);
    auto const now_leading = co_await boss.leader(asio::use_awaitable);
    BOOST_TEST(!now_leading.has_value());
    // Observers saw the failed campaign elected: its resignation tells them it ended.
    auto const last_change = set.master().command({"XREVRANGE", "redisync_election_log:{boss}", "+", "-", "COUNT", "1"});
    BOOST_TEST_REQUIRE(last_change.elements().size() == 1u);
    BOOST_TEST(last_change.elements()[0].elements()[1].elements()[1].text() == "resigned");
  });
}

BOOST_AUTO_TEST_CASE(sentinels_and_data_nodes_with_passwords_of_their_own) {
  redisync::process::sentinel_options options;
  options.sentinel_password = "sentinel-secret";
  options.data_password = "data-secret";
  redis_sentinel_set set{options};
  auto url = set.url();
  url.insert(std::string_view{"redis-sentinel://"}.size(), ":data-secret@");
  run_client(fast_config(url + "?sentinel_password=sentinel-secret"),
             [&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
               auto h = co_await c.new_owner().lock("guarded").acquire(asio::use_awaitable);
               BOOST_TEST(h.token() > 0u);
               co_await h.release(asio::use_awaitable);
             });
  // The Sentinels' password is not the data nodes': a wrong one is refused, and said so.
  auto wrong = fast_config(url + "?sentinel_password=nope");
  wrong.connection_wait_limit = 2s;
  run_client(wrong, [&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto [ec, h] = co_await c.new_owner().lock("guarded").acquire(tuple_awaitable);
    BOOST_TEST((ec == error::not_connected));
    BOOST_TEST_INFO(c.last_connect_failure());
    BOOST_TEST(c.last_connect_failure().find("AUTH refused") != std::string::npos);
  });
}

BOOST_AUTO_TEST_CASE(a_master_name_no_sentinel_knows_fails_fast_and_says_so) {
  redis_sentinel_set set;
  auto url = set.url();
  url.replace(url.rfind('/') + 1, std::string::npos, "nosuch");
  auto cfg = fast_config(url);
  cfg.connection_wait_limit = 2s;
  run_client(cfg, [&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto [ec, h] = co_await c.new_owner().lock("x").acquire(tuple_awaitable);
    BOOST_TEST((ec == error::not_connected));
    auto const why = c.last_connect_failure();
    BOOST_TEST_INFO(why);
    BOOST_TEST(why.find("knows no master named 'nosuch'") != std::string::npos);
  });
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(sentinel_faults, *boost::unit_test::label("cluster"))

// Four `redisync stress` processes through a Sentinel failover (test/support/fault_scenario.hpp).
// The old master takes writes until the Sentinels' +switch-master reaches the clients (~1 s), and
// those writes are lost with it: docs/deployment.md says so, and WAIT narrows it.
// Two failovers, over and back (the second once the Sentinels can promote the old master, some 10 s
// later), under load: releases the old master acknowledged after the promotion are made again on
// the new one, so that once the way back is over, the lock is never free for more than 2 s at a
// time.
BOOST_AUTO_TEST_CASE(stress_processes_keep_exclusion_and_the_lock_through_two_sentinel_failovers_over_and_back) {
  redis_sentinel_set set;
  auto const on_master = [&set](std::vector<std::string> const& args) { return set.master().command(args); };
  std::int64_t back = 0;
  redisync::test::run_with_fault(on_master, {.lock = "there-and-back",
                                             .url = set.url(),
                                             .inject = [&] {
                                               set.failover();
                                               set.failover();  // back, once the old master is a replica
                                               back = redisync::test::monotonic_ns();
                                             },
                                             .processes = 4,
                                             .loses_late_writes = true,
                                             .two_masters_for_a_while = true,
                                             .available_within = 2s,
                                             .settled_at = &back,
                                             .iterations = 300});
}

BOOST_AUTO_TEST_CASE(stress_processes_keep_exclusion_and_tokens_rising_through_a_sentinel_failover) {
  redis_sentinel_set set;
  auto const on_master = [&set](std::vector<std::string> const& args) { return set.master().command(args); };
  redisync::test::run_with_fault(on_master,
                                 {"sentinel-failover", set.url(), [&] { set.failover(); }, false, 4, true});
}

BOOST_AUTO_TEST_SUITE_END()
