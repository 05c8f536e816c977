// Leader election across processes: `redisync stress --kind election` processes lead one at a time
// with rising terms and an exact fenced counter; a killed leader is replaced within its lease; a
// paused leader is told it lost and its fenced write with the old term is refused; a Redis restart
// without persistence is reported as a loss and terms keep growing.

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

using redisync::test::monotonic_ns;
using redisync::test::poll_until;
using redisync::test::stress_process;
using redisync::test::subscribers_of;
using redisync::test::temp_dir;

std::vector<std::string> election_args(std::string const& name, std::vector<std::string> more) {
  std::vector<std::string> args{"--kind", "election", "--lock", name};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(election_processes)

BOOST_AUTO_TEST_CASE(three_processes_lead_one_at_a_time_with_rising_terms_and_an_exact_counter) {
  redis_server redis;
  temp_dir dir;
  auto procs = redisync::test::start_stress(
      redis.url(), election_args("ep", {"--iterations", "30", "--hold-ms", "2", "--fence-key", "ep:fence"}), dir.path,
      3);
  redisync::test::history_check check;
  for (auto& p : procs) {
    BOOST_TEST_REQUIRE(p->wait(120s));
    BOOST_TEST(p->summary().at("errors").as_int64() == 0);
    BOOST_TEST(p->summary().at("lost").as_int64() == 0);
    check.add(p->history());
    check.add_summary(p->summary());
  }
  auto const counter = std::stoll(std::string{redis.command({"GET", "ep:counter"}).text()});
  BOOST_TEST(counter == 90);
  auto const out = check.check({.counter = counter});
  BOOST_TEST(out.acquired == 90);
  BOOST_TEST(out.accepted == 90);
  // Every term is in the log, which keeps the last 1,000 changes: 90 elected, 90 resigned.
  BOOST_TEST(redis.command({"XLEN", "redisync_election_log:{ep}"}).integer() == 180);
}

BOOST_AUTO_TEST_CASE(a_killed_leader_is_replaced_within_its_lease) {
  redis_server redis;
  temp_dir dir;
  constexpr auto lease = 1000ms;
  stress_process leader{redis.url(),
                        election_args("ek", {"--iterations", "1", "--hold-ms", "60000", "--watchdog-ms",
                                             std::to_string(lease.count())}),
                        dir.path, "leader"};
  BOOST_TEST_REQUIRE(poll_until([&] { return !leader.events("acquired").empty(); }, 10s));
  stress_process candidate{redis.url(), election_args("ek", {"--iterations", "1"}), dir.path, "candidate"};
  BOOST_TEST_REQUIRE(poll_until(
      [&] { return subscribers_of(redis, "redisson_lock__channel:redisync_election:{ek}") > 0; }, 10s));
  auto const killed_at = monotonic_ns();
  leader.kill_hard();
  BOOST_TEST_REQUIRE(candidate.wait(10s));
  auto const elected = candidate.events("acquired");
  BOOST_TEST_REQUIRE(elected.size() == 1u);
  auto const after = std::chrono::nanoseconds{elected[0].at("t_ns").as_int64() - killed_at};
  BOOST_TEST_MESSAGE("a killed leader replaced after "
                     << std::chrono::duration_cast<std::chrono::milliseconds>(after).count() << " ms (lease "
                     << lease.count() << " ms)");
  BOOST_TEST((after <= lease + 500ms));
  BOOST_TEST(elected[0].at("token").to_number<std::uint64_t>() >
             leader.events("acquired").at(0).at("token").to_number<std::uint64_t>());
  BOOST_TEST(candidate.summary().at("errors").as_int64() == 0);
}

BOOST_AUTO_TEST_CASE(a_paused_leader_is_told_it_lost_and_its_old_term_is_refused) {
  redis_server redis;
  temp_dir dir;
  stress_process paused{redis.url(),
                        election_args("es", {"--iterations", "1", "--hold-ms", "1500", "--watchdog-ms", "800",
                                             "--fence-key", "es:fence"}),
                        dir.path, "paused"};
  BOOST_TEST_REQUIRE(poll_until([&] { return !paused.events("acquired").empty(); }, 10s));
  paused.signal(SIGSTOP);
  stress_process next{redis.url(), election_args("es", {"--iterations", "1", "--fence-key", "es:fence"}), dir.path,
                      "next"};
  BOOST_TEST_REQUIRE(next.wait(10s));
  BOOST_TEST(next.summary().at("accepted").as_int64() == 1);
  paused.signal(SIGCONT);
  BOOST_TEST_REQUIRE(paused.wait(10s));
  auto const s = paused.summary();
  BOOST_TEST(s.at("lost").as_int64() == 1);
  BOOST_TEST(s.at("rejected").as_int64() == 1);
  BOOST_TEST(s.at("accepted").as_int64() == 0);
  BOOST_TEST(next.events("acquired").at(0).at("token").to_number<std::uint64_t>() >
             paused.events("acquired").at(0).at("token").to_number<std::uint64_t>());
  BOOST_TEST(redis.command({"GET", "es:counter"}).text() == "1");
}

BOOST_AUTO_TEST_CASE(redis_restarted_without_persistence_makes_the_leader_report_the_loss_and_terms_keep_growing) {
  redis_server redis;
  temp_dir dir;
  auto procs = redisync::test::start_stress(
      redis.url(), election_args("er", {"--iterations", "20", "--hold-ms", "100", "--watchdog-ms", "900"}), dir.path,
      2);
  BOOST_TEST_REQUIRE(poll_until([&] { return redisync::test::acquired_so_far(procs) >= 5; }, 20s));
  redis.kill_hard();
  auto const restarted_at = monotonic_ns();
  redis.start();
  std::int64_t lost = 0;
  for (auto& p : procs) {
    BOOST_TEST_REQUIRE(p->wait(120s));
    lost += p->summary().at("lost").as_int64();
  }
  BOOST_TEST(lost >= 1);
  redisync::test::expect_tokens_rise_across(procs, restarted_at);  // the terms
}

BOOST_AUTO_TEST_SUITE_END()
