// Multi-locks across processes: `redisync stress --kind multi` processes listing overlapping names
// in opposite orders never deadlock and keep every name's fenced counter exact; a killed holder's
// members all come free within its lease; a paused holder is fenced off on every member; a Redis
// restart without persistence is reported as a loss and tokens keep growing.

#include "testbed/redis_server.hpp"
#include "support/lock_fixture.hpp"
#include "support/processes.hpp"
#include "support/stress_process.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <csignal>

using namespace std::chrono_literals;
using redisync::process::redis_server;

namespace {

using redisync::test::expect_nothing_left;
using redisync::test::of_member;
using redisync::test::monotonic_ns;
using redisync::test::poll_until;
using redisync::test::stress_process;
using redisync::test::subscribers_of;
using redisync::test::temp_dir;

bool exists(redis_server const& redis, std::string const& key) { return redis.command({"EXISTS", key}).integer() == 1; }

}  // namespace

BOOST_AUTO_TEST_SUITE(multi_lock_processes)

BOOST_AUTO_TEST_CASE(four_processes_taking_overlapping_names_in_opposite_orders_finish_with_exact_counters) {
  redis_server redis;
  temp_dir dir;
  std::vector<std::string> const common{"--iterations", "40", "--workers", "2", "--hold-ms", "1",
                                        "--fence-key", "mp:fence", "--kind", "multi"};
  auto with = [&](std::string names) {
    auto args = common;
    args.insert(args.end(), {"--lock", std::move(names)});
    return args;
  };
  redisync::test::stress_group procs;
  procs.push_back(std::make_unique<stress_process>(redis.url(), with("mp:a,mp:b,mp:c"), dir.path, "p0"));
  procs.push_back(std::make_unique<stress_process>(redis.url(), with("mp:c,mp:b,mp:a"), dir.path, "p1"));
  procs.push_back(std::make_unique<stress_process>(redis.url(), with("mp:d,mp:c"), dir.path, "p2"));
  procs.push_back(std::make_unique<stress_process>(redis.url(), with("mp:a,mp:d"), dir.path, "p3"));
  for (auto& p : procs) {
    BOOST_TEST_REQUIRE(p->wait(180s));  // no deadlock
    BOOST_TEST(p->summary().at("errors").as_int64() == 0);
    BOOST_TEST(p->summary().at("lost").as_int64() == 0);
    BOOST_TEST(p->summary().at("acquired").as_int64() == 80);
  }
  // Per name, the histories read like one lock's: no overlap, rising tokens, an exact counter.
  std::map<std::string, std::int64_t> const takers{{"mp:a", 240}, {"mp:b", 160}, {"mp:c", 240}, {"mp:d", 160}};
  for (auto const& [name, expected] : takers) {
    BOOST_TEST_CONTEXT("member " << name) {
      redisync::test::history_check check;
      for (auto& p : procs) check.add(of_member(p->history(), name));
      auto const counter = std::stoll(std::string{redis.command({"GET", name + ":counter"}).text()});
      BOOST_TEST(counter == expected);
      auto const out = check.check({.counter = counter});
      BOOST_TEST(out.accepted == expected);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_killed_holders_members_all_come_free_within_its_lease) {
  redis_server redis;
  temp_dir dir;
  constexpr auto lease = 1000ms;
  stress_process holder{redis.url(),
                        {"--kind", "multi", "--lock", "mk:a,mk:b,mk:c", "--iterations", "1", "--hold-ms", "60000",
                         "--watchdog-ms", std::to_string(lease.count())},
                        dir.path, "holder"};
  BOOST_TEST_REQUIRE(poll_until([&] { return exists(redis, "mk:a") && exists(redis, "mk:c"); }, 10s));
  stress_process waiter{redis.url(),
                        {"--kind", "multi", "--lock", "mk:c,mk:b,mk:a", "--iterations", "1", "--lease-ms", "5000"},
                        dir.path, "waiter"};
  // It waits for the first member in the global order, holding nothing.
  BOOST_TEST_REQUIRE(poll_until([&] { return subscribers_of(redis, "redisson_lock__channel:{mk:a}") > 0; }, 10s));
  auto const killed_at = monotonic_ns();
  holder.kill_hard();
  BOOST_TEST_REQUIRE(waiter.wait(10s));
  auto const acquired = waiter.events("acquired");
  BOOST_TEST_REQUIRE(acquired.size() == 3u);  // one line per member
  auto const after = std::chrono::nanoseconds{acquired.back().at("t_ns").as_int64() - killed_at};
  BOOST_TEST((after <= lease + 500ms),
             "acquired " << std::chrono::duration_cast<std::chrono::milliseconds>(after).count() << " ms after the kill");
  BOOST_TEST(waiter.summary().at("errors").as_int64() == 0);
  expect_nothing_left(redis, {"mk:a:counter", "mk:b:counter", "mk:c:counter"});
}

BOOST_AUTO_TEST_CASE(a_holder_paused_past_its_lease_is_fenced_off_on_every_member) {
  redis_server redis;
  temp_dir dir;
  std::vector<std::string> const args{"--kind", "multi", "--lock", "ms:a,ms:b", "--iterations", "1",
                                      "--fence-key", "ms:fence"};
  auto paused_args = args;
  paused_args.insert(paused_args.end(), {"--hold-ms", "1500", "--lease-ms", "800"});
  stress_process paused{redis.url(), paused_args, dir.path, "paused"};
  BOOST_TEST_REQUIRE(poll_until([&] { return paused.events("acquired").size() == 2u; }, 10s));
  paused.signal(SIGSTOP);
  auto other_args = args;
  other_args.insert(other_args.end(), {"--lease-ms", "5000"});
  stress_process other{redis.url(), other_args, dir.path, "other"};
  BOOST_TEST_REQUIRE(other.wait(10s));
  BOOST_TEST(other.summary().at("accepted").as_int64() == 2);
  paused.signal(SIGCONT);
  BOOST_TEST_REQUIRE(paused.wait(10s));
  auto const s = paused.summary();
  BOOST_TEST(s.at("rejected").as_int64() == 2);  // both members' writes refused by their tokens
  BOOST_TEST(s.at("accepted").as_int64() == 0);
  BOOST_TEST(s.at("lost").as_int64() == 1);
  BOOST_TEST(paused.events("lost").size() == 2u);
  for (std::string const name : {"ms:a", "ms:b"}) {
    BOOST_TEST(redis.command({"GET", name + ":counter"}).text() == "1");
  }
}

BOOST_AUTO_TEST_CASE(redis_restarted_without_persistence_makes_holders_report_the_loss_and_tokens_keep_growing) {
  redis_server redis;
  temp_dir dir;
  auto procs = redisync::test::start_stress(redis.url(),
                                            {"--kind", "multi", "--lock", "mr:a,mr:b", "--iterations", "20",
                                             "--hold-ms", "100", "--watchdog-ms", "900"},
                                            dir.path, 2);
  BOOST_TEST_REQUIRE(poll_until([&] { return redisync::test::acquired_so_far(procs) >= 8; }, 20s));
  redis.kill_hard();
  auto const restarted_at = monotonic_ns();
  redis.start();
  std::int64_t lost = 0;
  for (auto& p : procs) {
    BOOST_TEST_REQUIRE(p->wait(120s));
    lost += p->summary().at("lost").as_int64();
  }
  BOOST_TEST(lost >= 1);  // the holder at the time of the restart found out
  for (std::string const name : {"mr:a", "mr:b"}) {
    BOOST_TEST_CONTEXT("member " << name) { redisync::test::expect_tokens_rise_across(procs, restarted_at, name); }
  }
  expect_nothing_left(redis, {"mr:a:counter", "mr:b:counter"});
}

BOOST_AUTO_TEST_SUITE_END()
