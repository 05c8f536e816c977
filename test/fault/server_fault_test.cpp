// Server faults under load: three `redisync stress` processes of two workers each on one lock, with
// a fenced counter, while the server refuses, forgets or stalls. From their histories: no crash,
// every process done within its bound, every hold ended released or lost, fencing tokens strictly
// increasing, the counter equal to the accepted writes (unless the fault erased the counter
// too), and no lock left behind without an expiry within its lease.

#include "testbed/redis_server.hpp"
#include "support/processes.hpp"
#include "support/fault_scenario.hpp"
#include "support/stress_process.hpp"

#include <boost/test/unit_test.hpp>
#include <fmt/core.h>

#include <chrono>
#include <csignal>
#include <functional>
#include <thread>

using namespace std::chrono_literals;
using redisync::process::redis_server;
using redisync::test::failover;
using redisync::test::fault_scenario;
using redisync::test::fault_time;
using redisync::test::linked;
using redisync::test::poll_until;
using redisync::test::role;
using redisync::test::run_with_fault;

namespace {

void for_a_while(std::chrono::milliseconds d, std::function<void()> each, std::chrono::milliseconds every) {
  auto const end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
    each();
    std::this_thread::sleep_for(every);
  }
}

// Adds a user that may do everything (Redis 7 gives new users no channels by default) and returns
// the URL to connect as that user.
std::string add_user(redis_server const& redis) {
  redis.command({"ACL", "SETUSER", "locker", "on", ">pw", "~*", "&*", "+@all"});
  return fmt::format("redis://locker:pw@127.0.0.1:{}", redis.port());
}

}  // namespace

BOOST_AUTO_TEST_SUITE(server_faults)

BOOST_AUTO_TEST_CASE(a_demoted_master_answers_readonly_to_renewals_releases_and_acquires) {
  redis_server master;
  redis_server replica{redisync::process::replica_of(master.port())};
  BOOST_TEST_REQUIRE(poll_until([&] { return role(replica) == "slave" && linked(replica); }, 10s));
  // The clients stay on the old master, which refuses writes with READONLY until it is promoted
  // back. FAILOVER waits for the replica to catch up: nothing is lost either way.
  run_with_fault(master, {"readonly", master.url(), [&] {
                            failover(master, replica);
                            std::this_thread::sleep_for(fault_time);
                            failover(replica, master);
                          }});
}

BOOST_AUTO_TEST_CASE(an_acl_revoke_of_scripts_answers_noperm_to_every_lock_call) {
  redis_server redis;
  run_with_fault(redis, {"noperm-scripts", add_user(redis), [&] {
                           redis.command({"ACL", "SETUSER", "locker", "-eval", "-evalsha"});
                           std::this_thread::sleep_for(fault_time);
                           redis.command({"ACL", "SETUSER", "locker", "+eval", "+evalsha"});
                         }});
}

BOOST_AUTO_TEST_CASE(an_acl_revoke_of_channels_refuses_unlock_messages_and_subscriptions) {
  redis_server redis;
  run_with_fault(redis, {"noperm-channels", add_user(redis), [&] {
                           redis.command({"ACL", "SETUSER", "locker", "resetchannels"});
                           std::this_thread::sleep_for(fault_time);
                           redis.command({"ACL", "SETUSER", "locker", "&*"});
                         }});
}

BOOST_AUTO_TEST_CASE(out_of_memory_refuses_acquires_and_hand_offs) {
  redis_server redis;
  run_with_fault(redis, {"oom", redis.url(), [&] {
                           redis.command({"CONFIG", "SET", "maxmemory", "1"});
                           std::this_thread::sleep_for(fault_time);
                           redis.command({"CONFIG", "SET", "maxmemory", "0"});
                         }});
}

// With the tool's defaults (the watchdog's 30 s lease, no pause between tries), waiters on a free
// lock stalled ~28.6 s after a 2 s OOM (3 of 3 runs before the fix): the lock went without a message
// they heard, and the heads slept on the holder's PTTL.
BOOST_AUTO_TEST_CASE(after_a_two_second_oom_waiters_on_a_free_lock_do_not_stall) {
  redis_server redis;
  redisync::test::temp_dir dir;
  std::vector<std::string> const args{"--lock", "oom-stall", "--workers", "2", "--iterations", "200",
                                      "--counter", "oom-stall:counter"};
  auto group = redisync::test::start_stress(redis.url(), args, dir.path, 2);
  BOOST_TEST_REQUIRE(poll_until(
      [&] {
        for (auto const& p : group) {
          if (p->events("acquired").empty()) return false;
        }
        return true;
      },
      20s));
  redis.command({"CONFIG", "SET", "maxmemory", "1"});
  std::this_thread::sleep_for(2s);
  redis.command({"CONFIG", "SET", "maxmemory", "0"});
  auto const after = std::chrono::steady_clock::now();
  redisync::test::wait_for_group(group, 60s);
  auto const took = std::chrono::steady_clock::now() - after;
  auto const took_ms = std::chrono::duration_cast<std::chrono::milliseconds>(took).count();
  BOOST_TEST_MESSAGE("the work after the fault took " << took_ms << " ms");
  BOOST_TEST((took < 8s), "the work after the fault took " << took_ms << " ms");
  auto const out = redisync::test::check_stress_group(group, {});
  BOOST_TEST(out.acquired > 0);
}

BOOST_AUTO_TEST_CASE(a_script_flush_storm_makes_every_call_reload_its_script) {
  redis_server redis;
  run_with_fault(redis, {"flush-storm", redis.url(), [&] {
                           for_a_while(fault_time, [&] { redis.command({"SCRIPT", "FLUSH"}); }, 5ms);
                         }});
}

BOOST_AUTO_TEST_CASE(flushall_while_held_makes_the_holders_report_the_loss) {
  redis_server redis;
  run_with_fault(redis, {"flushall", redis.url(), [&] { redis.command({"FLUSHALL"}); }, true});
}

BOOST_AUTO_TEST_CASE(debug_sleep_past_the_lease_stalls_everyone_and_ends_the_holds_in_time) {
  redis_server redis{redisync::process::with_args({"--enable-debug-command", "yes"})};
  run_with_fault(redis, {"debug-sleep", redis.url(), [&] { redis.command({"DEBUG", "SLEEP", "1.2"}); }});
}

BOOST_AUTO_TEST_CASE(a_stopped_redis_process_stalls_everyone_and_ends_the_holds_in_time) {
  redis_server redis;
  run_with_fault(redis, {"sigstop", redis.url(), [&] {
                           redis.send_signal(SIGSTOP);
                           std::this_thread::sleep_for(fault_time);
                           redis.send_signal(SIGCONT);
                         }});
}

BOOST_AUTO_TEST_CASE(a_restart_without_persistence_forgets_every_hold) {
  redis_server redis;
  run_with_fault(redis, {"restart", redis.url(), [&] {
                           redis.kill_hard();
                           redis.start();
                         },
                         true});
}

BOOST_AUTO_TEST_CASE(a_tampered_token_key_refuses_acquires_until_it_is_repaired) {
  redis_server redis;
  run_with_fault(redis, {"tampered", redis.url(), [&] {
                           redis.command({"SET", "redisson_lock_token:{tampered}", "99999999999999999999"});
                           std::this_thread::sleep_for(500ms);
                           redis.command({"SET", "redisson_lock_token:{tampered}", "not a number"});
                         }});
}

BOOST_AUTO_TEST_SUITE_END()
