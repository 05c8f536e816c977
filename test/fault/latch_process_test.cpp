// A latch as a barrier across processes (`redisync stress --kind latch`): four processes pass it
// together round after round; a waiter paused while it opened finds it open when resumed; a
// participant killed after its count-down holds nobody back; a restart without persistence opens
// it for the processes still waiting (the count lived only in Redis).

#include "testbed/redis_server.hpp"
#include "support/lock_fixture.hpp"
#include "support/processes.hpp"
#include "support/stress_process.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <csignal>
#include <map>
#include <set>

using namespace std::chrono_literals;
using redisync::process::redis_server;

namespace {

using redisync::test::poll_until;
using redisync::test::stress_process;
using redisync::test::temp_dir;

std::vector<std::string> barrier(std::string const& name, int count, int iterations) {
  return {"--kind", "latch", "--lock", name, "--permits", std::to_string(count), "--iterations",
          std::to_string(iterations)};
}

void expect_opened(stress_process& p, std::int64_t times) {
  BOOST_TEST_REQUIRE(p.wait(30s));
  BOOST_TEST(p.exit_code() == 0);
  BOOST_TEST(p.summary().at("acquired").as_int64() == times);
  BOOST_TEST(p.summary().at("errors").as_int64() == 0);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(latch_processes)

BOOST_AUTO_TEST_CASE(four_processes_pass_a_latch_together_round_after_round) {
  redis_server redis;
  temp_dir dir;
  auto procs = redisync::test::start_stress(redis.url(), barrier("lb", 4, 10), dir.path, 4);
  for (auto& p : procs) expect_opened(*p, 10);
  // Each round's latch was counted down once by every process, from 4 to 0: it opened at the last.
  std::map<std::string, std::multiset<std::int64_t>> left;
  for (auto& p : procs) {
    for (auto const& e : p->events("counted_down")) {
      left[std::string{e.at("latch").as_string()}].insert(e.at("left").as_int64());
    }
  }
  BOOST_TEST(left.size() == 10u);
  for (auto const& [latch, counts] : left) {
    BOOST_TEST((counts == std::multiset<std::int64_t>{0, 1, 2, 3}), latch << " was not counted down 4, 3, 2, 1");
  }
}

BOOST_AUTO_TEST_CASE(a_waiter_paused_while_the_latch_opened_finds_it_open_when_resumed) {
  redis_server redis;
  temp_dir dir;
  stress_process paused{redis.url(), barrier("lp", 3, 1), dir.path, "paused"};
  BOOST_TEST_REQUIRE(poll_until([&] { return !paused.events("counted_down").empty(); }, 10s));
  paused.signal(SIGSTOP);
  stress_process second{redis.url(), barrier("lp", 3, 1), dir.path, "second"};
  stress_process third{redis.url(), barrier("lp", 3, 1), dir.path, "third"};
  expect_opened(second, 1);
  expect_opened(third, 1);
  paused.signal(SIGCONT);
  expect_opened(paused, 1);
}

BOOST_AUTO_TEST_CASE(a_participant_killed_after_its_count_down_holds_nobody_back) {
  redis_server redis;
  temp_dir dir;
  stress_process killed{redis.url(), barrier("lk", 2, 1), dir.path, "killed"};
  BOOST_TEST_REQUIRE(poll_until([&] { return !killed.events("counted_down").empty(); }, 10s));
  killed.kill_hard();
  stress_process other{redis.url(), barrier("lk", 2, 1), dir.path, "other"};
  expect_opened(other, 1);
}

BOOST_AUTO_TEST_CASE(a_restart_without_persistence_opens_the_latch_for_the_processes_still_waiting) {
  redis_server redis;
  temp_dir dir;
  auto procs = redisync::test::start_stress(redis.url(), barrier("lr", 3, 1), dir.path, 2);
  BOOST_TEST_REQUIRE(poll_until(
      [&] {
        return std::all_of(procs.begin(), procs.end(), [](auto& p) { return !p->events("counted_down").empty(); });
      },
      10s));
  redis.kill_hard();
  redis.start();
  for (auto& p : procs) expect_opened(*p, 1);  // the count went with the data: a missing key is open
}

BOOST_AUTO_TEST_SUITE_END()
