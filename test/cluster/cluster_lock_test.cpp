// Locks on a real 3-master, 3-replica Redis Cluster: every kind on names over every slot, wake-ups
// over sharded pub/sub, requests routed by their keys, and locks through a manual failover, a
// killed master and a slot migrated while its lock is held and waited on.

#include "testbed/redis_cluster.hpp"
#include "support/fault_scenario.hpp"
#include "support/cluster_names.hpp"
#include "support/lock_fixture.hpp"
#include "support/processes.hpp"

#include <redisync/redisync.hpp>

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <thread>

namespace asio = boost::asio;
using namespace redisync::test::lock_names;
using redisync::lock_kind;
using redisync::process::key_slot;
using redisync::process::migrate_step;
using redisync::process::redis_cluster;
using namespace boost::asio::experimental::awaitable_operators;

namespace {

// One cluster for the whole suite: starting one takes seconds. Tests that change roles leave it
// ok (wait_ok), and never assume who is master.
redis_cluster& shared_cluster() {
  static redis_cluster cluster;
  return cluster;
}

void run_on_cluster(redisync::test::client_body body, std::chrono::seconds limit = std::chrono::seconds{60},
                    std::function<void(redisync::config&)> tune = {}) {
  auto cfg = fast_config(shared_cluster().url());
  if (tune) tune(cfg);
  run_client(cfg, std::move(body), limit);
}

using redisync::test::name_on;

using redisync::test::all_lock_kinds;

}  // namespace

BOOST_AUTO_TEST_SUITE(cluster_locks, *boost::unit_test::label("cluster"))

BOOST_AUTO_TEST_CASE(locks_of_every_kind_work_on_a_thousand_names_over_every_master) {
  auto& cluster = shared_cluster();
  std::set<std::size_t> masters_used;
  for (int i = 0; i < 1000; ++i) masters_used.insert(cluster.master_of_slot(key_slot("spread-" + std::to_string(i))));
  BOOST_TEST(masters_used.size() == 3u);
  run_on_cluster([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto me = c.new_owner();
    std::vector<held> holds;
    for (int i = 0; i < 1000; ++i) {
      auto l = redisync::test::lock_of_kind(me, all_lock_kinds[i % 4], "spread-" + std::to_string(i));
      holds.push_back(co_await l.acquire(asio::use_awaitable));
      BOOST_TEST((holds.back().token() > 0u) == (all_lock_kinds[i % 4] != lock_kind::read));  // reads carry 0
    }
    for (auto& h : holds) co_await h.release(asio::use_awaitable);
  });
}

// A fair waiter of another client: its client's liveness key sits in the lock's slot (a script
// reaches no other), the holder's release reads it there and calls the waiter; once that client
// dies, its key lapses and the next waiter is served past it.
BOOST_AUTO_TEST_CASE(fair_waiters_are_judged_alive_per_client_in_the_lock_slot) {
  auto& cluster = shared_cluster();
  run_on_cluster([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto cfg = fast_config(cluster.url());
    cfg.fair_waiter_liveness = 500ms;
    redisync::test::running_client dying{ctx, cfg}, living{ctx, cfg};
    auto holder = co_await c.new_owner().fair_lock("judged").acquire(asio::use_awaitable);
    redisync::test::background_acquire first{ctx, dying->new_owner().fair_lock("judged")};
    auto const queue = "redisync_fair_queue:{judged}";
    auto& node = cluster.node(cluster.master_of_slot(key_slot("judged")));
    co_await redisync::test::wait_until([&] { return node.command({"ZCARD", queue}).integer() == 1; }, 5s);
    redisync::test::background_acquire second{ctx, living->new_owner().fair_lock("judged")};
    co_await redisync::test::wait_until([&] { return node.command({"ZCARD", queue}).integer() == 2; }, 5s);
    // Both clients' keys are on the lock's node, in its slot.
    auto const keys = node.command({"KEYS", "redisync_alive:*"});
    BOOST_TEST_REQUIRE(keys.elements().size() == 2u);
    for (auto const& k : keys.elements()) BOOST_TEST(key_slot(std::string{k.text()}) == key_slot("judged"));
    co_await dying.stop();
    co_await redisync::test::wait_until([&] { return node.command({"KEYS", "redisync_alive:*"}).elements().size() == 1; }, 3s);
    co_await holder.release(asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await second.wait(5s));
    BOOST_TEST_REQUIRE(second.result().has_value());
    co_await second.result()->release(asio::use_awaitable);
    co_await living.stop();
  });
}

BOOST_AUTO_TEST_CASE(a_release_wakes_a_waiter_of_every_kind_over_sharded_pubsub) {
  run_on_cluster([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    for (auto const kind : all_lock_kinds) {
      // Without a message the waiter would sleep until the 30 s lease ran out.
      auto name = "wake-" + std::to_string(static_cast<int>(kind));
      auto a = c.new_owner(), b = c.new_owner();
      auto first = co_await redisync::test::lock_of_kind(a, lock_kind::write == kind || lock_kind::read == kind
                                                                ? lock_kind::write
                                                                : kind,
                                                          name)
                       .acquire(asio::use_awaitable);
      redisync::test::background_acquire waiter{ctx, redisync::test::lock_of_kind(b, kind, name)};
      co_await redisync::test::sleep_for(200ms);
      BOOST_TEST(!waiter.result().has_value());
      auto const released = std::chrono::steady_clock::now();
      co_await first.release(asio::use_awaitable);
      BOOST_TEST_REQUIRE(co_await waiter.wait(5s));
      BOOST_TEST_INFO("kind " << static_cast<int>(kind));
      BOOST_TEST_REQUIRE(waiter.result().has_value());
      if (kind != lock_kind::read) BOOST_TEST(waiter.result()->token() > first.token());
      BOOST_TEST_MESSAGE("woken in " << std::chrono::duration_cast<std::chrono::milliseconds>(
                                             std::chrono::steady_clock::now() - released).count()
                                     << " ms");
      co_await waiter.result()->release(asio::use_awaitable);
    }
  });
}

BOOST_AUTO_TEST_CASE(exec_and_query_go_to_the_node_of_their_keys_and_keys_over_slots_are_refused) {
  run_on_cluster([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    for (int i = 0; i < 30; ++i) {
      auto const key = "data-" + std::to_string(i);
      redisync::resp::request set;
      set.push("SET", key, std::to_string(i));
      co_await c.exec(std::move(set), asio::use_awaitable);
      redisync::resp::request get;
      get.push("GET", key);
      BOOST_TEST(co_await c.query<std::int64_t>(std::move(get), asio::use_awaitable) == i);
    }
    redisync::resp::request tagged;
    tagged.push("MGET", "{user}a", "{user}b");
    auto [tec, treply] = co_await c.exec(std::move(tagged), tuple_awaitable);
    BOOST_TEST(!tec);
    redisync::resp::request spread;
    spread.push("MGET", "data-1", "data-2");  // slots 5 and 9 apart: no node serves both
    BOOST_TEST_REQUIRE(key_slot("data-1") != key_slot("data-2"));
    auto [ec, reply] = co_await c.exec(std::move(spread), tuple_awaitable);
    BOOST_TEST((ec == error::cross_slot));
    redisync::resp::request ping;
    ping.push("PING");
    auto [pec, pong] = co_await c.exec(std::move(ping), tuple_awaitable);
    BOOST_TEST(!pec);
  });
}

BOOST_AUTO_TEST_CASE(inspect_names_the_node_of_the_lock_and_its_holder) {
  auto& cluster = shared_cluster();
  run_on_cluster([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto me = c.new_owner();
    auto h = co_await me.lock("inspected").acquire(asio::use_awaitable);
    redisync::test::temp_dir dir;
    redisync::test::child tool{REDISYNC_TOOL_PATH, {"inspect", "--redis", cluster.url(), "inspected", "--json"},
                               dir.path / "out", dir.path / "err"};
    BOOST_TEST_REQUIRE(tool.wait(20s));
    BOOST_TEST(tool.exit_code() == 0);
    auto const lines = redisync::test::json_lines(dir.path / "out");
    BOOST_TEST_REQUIRE(lines.size() == 1u);
    auto const& o = lines.front();
    BOOST_TEST(o.at("node").as_string() == c.node_of("inspected"));
    BOOST_TEST(o.at("node").as_string() ==
               "127.0.0.1:" + std::to_string(cluster.node(cluster.master_of_slot(key_slot("inspected"))).port()));
    BOOST_TEST(o.at("holders").as_object().contains(h.owner_id()));
    co_await h.release(asio::use_awaitable);
  });
}

BOOST_AUTO_TEST_CASE(a_hold_survives_a_manual_failover_and_tokens_keep_rising) {
  auto& cluster = shared_cluster();
  auto const name = name_on(cluster, cluster.masters().front(), "failover-");
  run_on_cluster([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto me = c.new_owner();
    auto h = co_await me.lock(name).acquire(asio::use_awaitable);
    auto const first = h.token();
    auto const master = cluster.master_of_slot(key_slot(name));
    cluster.failover(cluster.replica_of(master));
    BOOST_TEST(cluster.master_of_slot(key_slot(name)) != master);
    // Renewed on the new master for longer than the lease: the watchdog found its way there.
    co_await redisync::test::sleep_for(4s);
    BOOST_TEST((h.status() == hold_status::held));
    co_await h.release(asio::use_awaitable);
    auto again = co_await me.lock(name).acquire(asio::use_awaitable);
    BOOST_TEST(again.token() > first);
    co_await again.release(asio::use_awaitable);
  }, std::chrono::seconds{90}, [](redisync::config& cfg) { cfg.watchdog_lease = 3s; });
}

// Redis decides when a replica takes over (node timeout, then an election that may be retried
// after twice the node timeout); the client is judged by how soon it follows.
BOOST_AUTO_TEST_CASE(after_a_master_is_killed_its_locks_are_available_within_3s_of_a_replica_taking_over) {
  auto& cluster = shared_cluster();
  auto const victim = cluster.masters().back();
  auto const name = name_on(cluster, victim, "killed-");
  run_on_cluster([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto me = c.new_owner();
    auto before = co_await me.lock(name).acquire(asio::use_awaitable);
    co_await before.release(asio::use_awaitable);
    auto const killed = std::chrono::steady_clock::now();
    cluster.node(victim).kill_hard();
    // The fixture's calls block: the take-over is watched from a thread while the client tries.
    std::atomic<bool> taken_over{false};
    std::chrono::steady_clock::duration took_over{};
    std::thread watcher{[&] {
      while (std::chrono::steady_clock::now() - killed < 30s) {
        try {
          if (cluster.master_of_slot(key_slot(name)) != victim) {
            took_over = std::chrono::steady_clock::now() - killed;
            taken_over = true;
            return;
          }
        } catch (std::exception const&) {  // a node settling: asked again
        }
        std::this_thread::sleep_for(50ms);
      }
    }};
    // Tried until it works: the client follows the failover by itself.
    std::optional<held> after;
    while (!after && std::chrono::steady_clock::now() - killed < 30s) {
      auto [ec, h] = co_await me.lock(name).try_acquire(1s, tuple_awaitable);
      if (!ec && h) after = std::move(*h);
    }
    auto const took = std::chrono::steady_clock::now() - killed;
    while (!taken_over && std::chrono::steady_clock::now() - killed < 31s) co_await redisync::test::sleep_for(50ms);
    watcher.join();
    auto const ms = [](auto d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); };
    BOOST_TEST_MESSAGE("a replica took over after " << ms(took_over) << " ms, the lock was held again after "
                                                     << ms(took) << " ms (node timeout 2000 ms)");
    BOOST_TEST_REQUIRE(taken_over.load());
    BOOST_TEST_REQUIRE(after.has_value());
    BOOST_TEST(ms(took) - ms(took_over) < 3000);
    BOOST_TEST(after->token() > before.token());
    co_await after->release(asio::use_awaitable);
    (void)ctx;
  }, std::chrono::seconds{90});
  cluster.restart(victim);
}

BOOST_AUTO_TEST_CASE(a_lock_held_and_waited_on_while_its_slot_migrates_passes_to_the_waiter) {
  auto& cluster = shared_cluster();
  auto const from = cluster.masters().front();
  auto const name = name_on(cluster, from, "moving-");
  std::size_t to = 0;
  for (auto m : cluster.masters()) {
    if (m != from) to = m;
  }
  auto const slot = key_slot(name);
  run_on_cluster([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto a = c.new_owner(), b = c.new_owner();
    auto h = co_await a.lock(name).acquire(asio::use_awaitable);
    redisync::test::background_acquire waiter{ctx, b.lock(name)};
    co_await redisync::test::sleep_for(200ms);
    // Marked as moving, keys still on the source: requests for it are served there or ASKed on.
    cluster.migrate_slot(static_cast<std::uint16_t>(slot), to, migrate_step::keys_moved);
    co_await redisync::test::sleep_for(500ms);  // renewals and the waiter's tries meet ASK
    BOOST_TEST((h.status() == hold_status::held));
    cluster.finish_migration(static_cast<std::uint16_t>(slot));
    co_await h.release(asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await waiter.wait(10s));
    BOOST_TEST_REQUIRE(waiter.result().has_value());
    BOOST_TEST(waiter.result()->token() > h.token());
    co_await waiter.result()->release(asio::use_awaitable);
    BOOST_TEST(cluster.master_of_slot(static_cast<std::uint16_t>(slot)) == to);
  });
}

// A replica first among the seeds: it is asked for the map, but no request goes to it, and calls
// made before the map came wait for it instead of failing. Fresh clients, calls at once, many
// times: the replica seed failed some clients' first calls as "may have run".
BOOST_AUTO_TEST_CASE(any_node_may_be_a_seed_and_early_calls_wait_for_the_map) {
  auto& cluster = shared_cluster();
  auto const replica = cluster.replicas().front();
  auto const master = cluster.masters().front();
  std::string const replica_at = "127.0.0.1:" + std::to_string(cluster.node(replica).port());
  auto const url = "redis-cluster://" + replica_at + ",127.0.0.1:" + std::to_string(cluster.node(master).port());
  std::vector<std::string> names;
  for (auto m : cluster.masters()) names.push_back(name_on(cluster, m, "seeded-"));
  for (int round = 0; round < 20; ++round) {
    run_client(fast_config(url), [&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
      for (auto const& name : names) BOOST_TEST(c.node_of(name) != replica_at, "round " << round);
      auto me = c.new_owner();
      auto take = [](redisync::lock l) -> asio::awaitable<error_code> {
        auto [ec, h] = co_await l.acquire(tuple_awaitable);
        if (!ec) std::tie(ec) = co_await h.release(tuple_awaitable);
        co_return ec;
      };
      for (auto const& name : names) {
        auto const ec = co_await take(me.lock(name));
        BOOST_TEST(!ec, "round " << round << ", " << name << ": " << ec.message());
        BOOST_TEST(c.node_of(name) ==
                   "127.0.0.1:" + std::to_string(cluster.node(cluster.master_of_slot(key_slot(name))).port()));
      }
    });
  }
}

// Mid-migration, the lock's fencing counter has moved and its lock key (free: absent) has not: the
// source sends the acquire on with ASK and the target answers TRYAGAIN, until the migration ends.
// The acquire retries within its own wait: it fails at its bound with the cause, or gets the lock
// once the migration is done.
BOOST_AUTO_TEST_CASE(an_acquire_whose_keys_a_live_migration_split_retries_within_its_wait) {
  auto& cluster = shared_cluster();
  auto const from = cluster.masters().front();
  auto const name = name_on(cluster, from, "split-");
  std::size_t to = 0;
  for (auto m : cluster.masters()) {
    if (m != from) to = m;
  }
  auto const slot = static_cast<std::uint16_t>(key_slot(name));
  run_on_cluster([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto lock = c.make_lock(name);
    auto first = co_await lock.acquire(asio::use_awaitable);  // the fencing counter exists from here
    co_await first.release(asio::use_awaitable);
    cluster.migrate_slot(slot, to, migrate_step::slot_marked);
    cluster.migrate_key(slot, "redisson_lock_token:{" + name + "}");
    auto const started = std::chrono::steady_clock::now();
    auto [ec, none] = co_await lock.try_acquire(1500ms, tuple_awaitable);
    auto const took = std::chrono::steady_clock::now() - started;
    BOOST_TEST((ec == error::try_again || ec == error::ask), ec.message());  // the migration, either way
    BOOST_TEST(!none.has_value());
    BOOST_TEST((took >= 1400ms && took < 2500ms), "ended after " << took / 1ms << " ms of a 1500 ms wait");
    // The migration ends while an acquire waits: it gets the lock on the new master.
    std::thread finisher{[&] {
      std::this_thread::sleep_for(500ms);  // a point in the wait, not a synchronisation
      cluster.finish_migration(slot);
    }};
    auto [gec, got] = co_await lock.try_acquire(10s, tuple_awaitable);
    finisher.join();
    BOOST_TEST(!gec, gec.message());
    BOOST_TEST_REQUIRE(got.has_value());
    BOOST_TEST(cluster.master_of_slot(slot) == to);
    co_await got->release(asio::use_awaitable);
  });
}

BOOST_AUTO_TEST_SUITE_END()

// Four `redisync stress` processes through failovers (test/support/fault_scenario.hpp): exclusion
// within validity windows, every hold ended once, tokens rising, the fenced counter exact.
BOOST_AUTO_TEST_SUITE(cluster_faults, *boost::unit_test::label("cluster"))

namespace {

// The lock, its counter and its fence in one slot (a fenced write names both keys).
redisync::test::lock_server server_of(redis_cluster& cluster, std::string const& lock) {
  return [&cluster, lock](std::vector<std::string> const& args) {
    return cluster.node(cluster.master_of_slot(key_slot(lock))).command(args);
  };
}

}  // namespace

BOOST_AUTO_TEST_CASE(stress_processes_keep_exclusion_and_the_counter_through_a_manual_failover) {
  auto& cluster = shared_cluster();
  std::string const lock = "{manual-failover}";
  redisync::test::run_with_fault(server_of(cluster, lock), {lock, cluster.url(), [&] {
    cluster.failover(cluster.replica_of(cluster.master_of_slot(key_slot(lock))));
  }, false, 4});
}

// A master stopped (SIGSTOP) past the node timeout under stress processes holding `lock` (a plain
// lock, or what `kind_args` say): its replica takes over; resumed, it runs what it had queued
// (releases, their unlock messages, acquires, fenced writes: acknowledged, then lost) before it
// hears that it is a replica now, so for those milliseconds two masters grant (a hold granted by
// the old one is lost at its first renewal, and its fenced write refused). The lock is never left
// held by no one: from the promotion on, it is free at most 2 s at a time.
namespace {
void run_through_a_stopped_master(std::string const& lock, std::vector<std::string> kind_args, int processes,
                                  int iterations) {
  auto& cluster = shared_cluster();
  auto const victim = cluster.master_of_slot(key_slot(lock));
  std::int64_t promoted = 0;
  bool const permits = std::ranges::find(kind_args, "permits") != kind_args.end();
  redisync::test::run_with_fault(server_of(cluster, lock), {.lock = lock,
                                                            .url = cluster.url(),
                                                            .inject = [&] {
                                                              cluster.pause_master(victim);
                                                              promoted = redisync::test::monotonic_ns();
                                                              cluster.resume(victim);
                                                            },
                                                            .processes = processes,
                                                            .loses_late_writes = true,
                                                            .two_masters_for_a_while = true,
                                                            .available_within = 2s,
                                                            .settled_at = &promoted,
                                                            .iterations = iterations,
                                                            .kind_args = std::move(kind_args),
                                                            .leased_permits = permits});
}
}  // namespace

BOOST_AUTO_TEST_CASE(stress_processes_keep_exclusion_and_the_lock_through_a_master_stopped_past_the_node_timeout) {
  run_through_a_stopped_master("{paused-master}", {}, 4, 150);
}

// The same under other kinds of hold that one owner has at a time: a fair lock, a leadership, one
// leased permit, a read-write lock's write.
BOOST_DATA_TEST_CASE(exclusive_kinds_come_back_through_a_master_stopped_past_the_node_timeout,
                     boost::unit_test::data::make(std::vector<std::string>{"fair", "election", "permits", "write"}),
                     kind) {
  std::vector<std::string> kind_args{"--kind", kind};
  if (kind == "permits") kind_args.insert(kind_args.end(), {"--permits", "1"});
  run_through_a_stopped_master("{paused-" + kind + "}", std::move(kind_args), 3, 100);
}

// A multi-lock over three names, one on each master, through the master of one of them stopped past
// the node timeout and resumed: per name the histories read like a lock's (on the stopped master's
// name two masters grant for a while, as above; the others stay exclusive, their counters exact),
// and from the promotion on the multi-lock is never free more than 2 s at a time.
BOOST_AUTO_TEST_CASE(multi_locks_over_every_master_come_back_through_one_stopped_past_the_node_timeout) {
  using namespace redisync::test;
  auto& cluster = shared_cluster();
  std::vector<std::string> names;  // braced: a name, its counter and its fence share a slot
  for (auto const master : cluster.masters()) names.push_back(name_on(cluster, master, "{paused-multi-", "}"));
  auto const victim = cluster.master_of_slot(key_slot(names.front()));
  std::string list = names[0] + "," + names[1] + "," + names[2];
  fault_load_run const run{cluster.url(),
                           fault_load(list, {"--kind", "multi", "--fence-key", "fence"}, liveness_lease, 60), 3,
                           "wait"};
  std::int64_t promoted = 0;
  auto const inject = [&](stress_group const&) {
    cluster.pause_master(victim);
    promoted = monotonic_ns();
    cluster.resume(victim);
  };
  run_through_fault(run, inject, [&](stress_group const& group) {
    auto const longest = longest_wait_for_a_grant_after({&group}, promoted);
    BOOST_TEST_REQUIRE(longest.has_value(), "no multi-lock was granted after the fault");
    BOOST_TEST_MESSAGE("multi-lock: free at most " << longest->count() << " ms at a time once the topology settled");
    BOOST_TEST((*longest <= std::chrono::milliseconds{2000}), "free for " << longest->count() << " ms");
    for (auto const& p : group) BOOST_TEST((p->exit_code() == 0 || p->exit_code() == 1), "exit code " << p->exit_code());
    for (auto const& name : names) {
      BOOST_TEST_CONTEXT("member " << name) {
        bool const stopped_there = name == names.front();
        history_check check;
        for (auto const& p : group) check.add(of_member(p->history(), name));
        std::optional<std::int64_t> counter;
        if (!stopped_there) {
          std::int64_t value = 0;
          server_of(cluster, name)({"GET", name + ":counter"}).as_integer(value);
          counter = value;
        }
        auto const out = check.check({.counter = counter, .windows = !stopped_there});
        BOOST_TEST(out.acquired == out.released + out.lost);
        BOOST_TEST_MESSAGE(name << ": " << out.acquired << " holds (" << out.lost << " lost), " << out.accepted
                                << " writes accepted, " << out.rejected << " rejected");
      }
    }
  });
}

// A read-write lock's readers and writers, two processes each, through the lock's master stopped
// past the node timeout and resumed: a read or a write whose release the old master took is made
// again on the new one, so neither side waits out the other's lease. From the promotion on, the
// lock is never more than 2 s without a grant of either side (writers go first while they wait:
// readers may wait for as long as writers keep coming), both sides are granted after it, and
// every hold ends once. Reads and writes meet only while two masters grant (reported, as above).
BOOST_AUTO_TEST_CASE(readers_and_writers_come_back_through_a_master_stopped_past_the_node_timeout) {
  using namespace redisync::test;
  auto& cluster = shared_cluster();
  std::string const lock = "{paused-rw}";
  auto const victim = cluster.master_of_slot(key_slot(lock));
  auto const counter = std::vector<std::string>{"--counter", lock + ":counter"};
  auto with = [&](std::vector<std::string> kind) {
    kind.insert(kind.end(), counter.begin(), counter.end());
    return fault_load(lock, kind, liveness_lease, 150);
  };
  temp_dir writers_dir, readers_dir;
  auto writers = start_stress(cluster.url(), with({"--kind", "write", "--fence-key", lock + ":fence"}), writers_dir.path, 2);
  auto readers = start_stress(cluster.url(), with({"--kind", "read"}), readers_dir.path, 2);
  auto const all_waited = [&] {
    for (auto const* group : {&writers, &readers}) {
      for (auto const& p : *group) {
        if (p->events("wait").empty()) return false;
      }
    }
    return true;
  };
  BOOST_TEST_REQUIRE(poll_until(all_waited, 20s));
  cluster.pause_master(victim);
  auto const promoted = monotonic_ns();
  cluster.resume(victim);
  wait_for_group(writers, 60s);
  wait_for_group(readers, 30s);
  auto const longest = longest_wait_for_a_grant_after({&writers, &readers}, promoted);
  BOOST_TEST_REQUIRE(longest.has_value(), "nothing granted after the fault");
  BOOST_TEST_MESSAGE("read-write lock: no grant for at most " << longest->count() << " ms once the topology settled");
  BOOST_TEST((*longest <= std::chrono::milliseconds{2000}), "no grant for " << longest->count() << " ms");
  for (auto const& [side, group] : {std::pair{"writes", &writers}, std::pair{"reads", &readers}}) {
    BOOST_TEST(longest_wait_for_a_grant_after({group}, promoted).has_value(), "no " << side << " after the fault");
    auto const out = check_stress_group(*group, {.counter = std::nullopt, .windows = false});
    BOOST_TEST_MESSAGE(side << ": " << out.acquired << " holds (" << out.lost << " lost), " << out.errors << " errors");
    std::int64_t met = 0;
    for (auto const& p : *group) met += p->summary().at("overlaps").as_int64();
    if (met > 0) BOOST_TEST_MESSAGE(side << ": " << met << " met a hold of the other side (two masters)");
  }
  auto const pttl = server_of(cluster, lock)({"PTTL", lock}).integer();
  BOOST_TEST((pttl == -2 || (pttl > 0 && pttl <= liveness_lease.count())), "PTTL " << pttl);
}

// The lock's slot migrates key by key to another master, `redis-cli --cluster reshard` moves other
// slots to that master (it refuses to run while a slot is migrating), and the lock's slot goes
// back key by key: the lock stays exclusive, and from the first step on it is never free for more
// than 2 s at a time (its keys split between two nodes meanwhile).
BOOST_AUTO_TEST_CASE(stress_processes_keep_exclusion_and_the_lock_through_a_key_by_key_migration_and_a_reshard) {
  auto& cluster = shared_cluster();
  std::string const lock = "{migrating}";
  auto const slot = static_cast<std::uint16_t>(key_slot(lock));
  auto const from = cluster.master_of_slot(slot);
  auto const masters = cluster.masters();
  auto const to = masters[(std::ranges::find(masters, from) - masters.begin() + 1) % masters.size()];
  auto const bystander = masters[(std::ranges::find(masters, from) - masters.begin() + 2) % masters.size()];
  auto const move_key_by_key = [&](std::size_t target) {
    cluster.migrate_slot(slot, target, migrate_step::slot_marked);
    while (cluster.migrate_one_key(slot)) std::this_thread::sleep_for(100ms);  // keys split meanwhile
    cluster.finish_migration(slot);
  };
  std::int64_t began = 0;
  redisync::test::run_with_fault(server_of(cluster, lock), {.lock = lock,
                                                            .url = cluster.url(),
                                                            .inject = [&] {
                                                              began = redisync::test::monotonic_ns();
                                                              move_key_by_key(to);
                                                              cluster.reshard(bystander, to, 50);
                                                              move_key_by_key(from);
                                                            },
                                                            .processes = 4,
                                                            .available_within = 2s,
                                                            .settled_at = &began,
                                                            .iterations = 150});
}

BOOST_AUTO_TEST_CASE(stress_processes_keep_exclusion_and_tokens_rising_through_a_killed_master) {
  auto& cluster = shared_cluster();
  std::string const lock = "{killed-master}";
  auto const victim = cluster.master_of_slot(key_slot(lock));
  redisync::test::run_with_fault(server_of(cluster, lock), {lock, cluster.url(), [&] {
    cluster.kill_master(victim);
  }, false, 4});
  cluster.restart(victim);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(cluster_waiters, *boost::unit_test::label("cluster"))

BOOST_AUTO_TEST_CASE(a_waiter_gets_the_lock_released_after_its_master_failed_over) {
  auto& cluster = shared_cluster();
  auto const name = name_on(cluster, cluster.masters().front(), "waited-over-failover-");
  run_on_cluster(
      [&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
        auto a = c.new_owner(), b = c.new_owner();
        auto first = co_await a.lock(name).acquire(asio::use_awaitable);
        redisync::test::background_acquire waiter{ctx, b.lock(name)};
        co_await redisync::test::sleep_for(200ms);
        auto const master = cluster.master_of_slot(key_slot(name));
        std::thread failing_over{[&] { cluster.failover(cluster.replica_of(master)); }};
        while (cluster.master_of_slot(key_slot(name)) == master) co_await redisync::test::sleep_for(50ms);
        failing_over.join();
        co_await redisync::test::sleep_for(1500ms);  // a renewal meets MOVED; the map moves on
        BOOST_TEST((first.status() == hold_status::held));
        BOOST_TEST(!waiter.result().has_value());
        co_await first.release(asio::use_awaitable);
        // The lease is 3 s: a waiter that missed the message would still try within it.
        BOOST_TEST_REQUIRE(co_await waiter.wait(2s));
        BOOST_TEST_REQUIRE(waiter.result().has_value(), "the waiter failed: " << waiter.error().message());
        BOOST_TEST(waiter.result()->token() > first.token());
        co_await waiter.result()->release(asio::use_awaitable);
      },
      std::chrono::seconds{60},
      [](redisync::config& cfg) {
        cfg.watchdog_lease = 3s;
        cfg.on_event = [](redisync::event const& e) {
          BOOST_TEST_MESSAGE(redisync::to_string(e.kind) << " " << e.lock << " " << e.error.message() << " "
                                                         << e.detail);
        };
      });
}

BOOST_AUTO_TEST_SUITE_END()

// redisync and a client of Redisson's lock protocol in cluster mode (test/interop/
// redisson_cluster_peer.mjs: SSUBSCRIBE, and SPUBLISH passed to the unlock script) exclude each
// other and wake each other's waiters on the same name. The lease is 30 s: a wake-up within 2 s
// can only be the unlock message.
BOOST_AUTO_TEST_SUITE(cluster_interop, *boost::unit_test::label("cluster"))

namespace {

std::vector<std::string> cluster_peer(std::vector<std::string> args) {
  char const* modules = std::getenv("REDISSON_NODE_MODULES");
  BOOST_TEST_REQUIRE((modules != nullptr && std::filesystem::exists(std::string{modules} + "/ioredis")),
                     "ioredis is missing: scripts/test.sh installs it into build/interop");
  args.insert(args.begin(), REDISYNC_SOURCE_DIR "/test/interop/redisson_cluster_peer.mjs");
  return args;
}

std::int64_t peer_event_ns(redisync::test::child const& peer, std::string_view kind) {
  auto const found = redisync::test::events(peer.lines(), kind);
  BOOST_TEST_REQUIRE(found.size() == 1u, "no '" << kind << "' event from the Redisson-protocol client");
  return std::stoll(std::string{found[0].at("t_ns").as_string()});
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_redisson_cluster_client_waits_for_redisync_and_is_woken_by_its_spublish) {
  auto& cluster = shared_cluster();
  redisync::test::temp_dir dir;
  std::int64_t released_at = 0;
  std::optional<redisync::test::child> peer;
  run_on_cluster([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto h = co_await c.new_owner().lock("interop-a").acquire(asio::use_awaitable);
    peer.emplace("node", cluster_peer({"contend", cluster.seed(), "interop-a"}), dir.path / "peer.out");
    co_await redisync::test::wait_until([&] { return !peer->lines().empty(); }, 20s);  // it tried
    co_await redisync::test::sleep_for(300ms);  // and subscribed
    released_at = redisync::test::monotonic_ns();
    co_await h.release(asio::use_awaitable);
  });
  BOOST_TEST_REQUIRE(peer->wait(20s));
  BOOST_TEST(peer->exit_code() == 0);
  auto const tried = redisync::test::events(peer->lines(), "tried");
  BOOST_TEST_REQUIRE(tried.size() == 1u);
  BOOST_TEST(!tried[0].at("held").as_bool());  // excluded while redisync held it
  BOOST_TEST((peer_event_ns(*peer, "locked") - released_at) / 1'000'000 < 2000);
}

BOOST_AUTO_TEST_CASE(redisync_waits_for_a_redisson_cluster_client_and_is_woken_by_its_spublish) {
  auto& cluster = shared_cluster();
  redisync::test::temp_dir dir;
  redisync::test::child peer{"node", cluster_peer({"hold", cluster.seed(), "interop-b", "800"}),
                             dir.path / "peer.out"};
  BOOST_TEST_REQUIRE(redisync::test::poll_until([&] { return !peer.lines().empty(); }, 20s));  // it holds
  std::int64_t acquired_at = 0;
  run_on_cluster([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto l = c.new_owner().lock("interop-b");
    BOOST_TEST(!(co_await l.try_acquire(0ms, asio::use_awaitable)).has_value());
    auto h = co_await l.acquire(asio::use_awaitable);  // waits for the peer's SPUBLISH
    acquired_at = redisync::test::monotonic_ns();
    co_await h.release(asio::use_awaitable);
  });
  BOOST_TEST_REQUIRE(peer.wait(20s));
  BOOST_TEST(peer.exit_code() == 0);
  BOOST_TEST((acquired_at - peer_event_ns(peer, "released")) / 1'000'000 < 2000);
}

BOOST_AUTO_TEST_SUITE_END()
