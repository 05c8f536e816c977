// The test bed's one set of checks over stress histories (testbed/history_checks.hpp), which the
// fault tests assert on and `redisync timeline` prints: each check finds what it names, and only
// that.

#include "testbed/history_checks.hpp"

#include <boost/test/unit_test.hpp>

#include <vector>

namespace tb = redisync::testbed;

namespace {

// A hold of `owner` in process `pid`: granted at `from`, its release sent at `to` (ms), ended
// `end` ("released", "lost", or nothing: still open).
void hold(std::vector<tb::history_event>& out, std::int64_t pid, std::string owner, std::uint64_t token,
          std::int64_t from, std::int64_t to, std::string end = "released") {
  auto const ms = [](std::int64_t t) { return t * 1'000'000; };
  out.push_back({.t_ns = ms(from), .pid = pid, .event = "acquired", .owner = owner, .token = token,
                 .valid_until_ns = ms(from + 1000)});
  if (end.empty()) return;
  out.push_back({.t_ns = ms(to), .pid = pid, .event = "releasing", .owner = owner, .token = token,
                 .valid_until_ns = ms(from + 1000)});
  out.push_back({.t_ns = ms(to), .pid = pid, .event = end, .owner = owner, .token = token});
}

void write(std::vector<tb::history_event>& out, std::int64_t pid, std::string owner, std::uint64_t token,
           std::int64_t value, std::string outcome) {
  out.push_back({.pid = pid, .event = "writing", .owner = owner, .token = token, .value = value});
  out.push_back({.pid = pid, .event = outcome, .owner = owner, .token = token});
}

tb::history_report checked(std::vector<tb::history_event> events, tb::reading how = {},
                           std::map<std::string, std::int64_t> counters = {}) {
  std::stable_sort(events.begin(), events.end(), [](auto const& a, auto const& b) { return a.t_ns < b.t_ns; });
  return tb::check_history(tb::follow(events, how), counters);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(history_checks)

BOOST_AUTO_TEST_CASE(holds_one_after_another_pass_every_check) {
  std::vector<tb::history_event> e;
  hold(e, 1, "a", 10, 0, 5);
  write(e, 1, "a", 10, 1, "write_accepted");
  hold(e, 2, "b", 11, 6, 9, "lost");
  hold(e, 1, "a", 12, 10, 12);
  auto const r = checked(e, {}, {{"", 1}});
  BOOST_TEST(r.holds == 3);
  BOOST_TEST(r.released == 2);
  BOOST_TEST(r.lost == 1);
  BOOST_TEST(r.overlaps == 0);
  BOOST_TEST(r.token_falls == 0);
  BOOST_TEST(r.counters.at("").missing == 0);
  BOOST_TEST(r.problems.empty());
}

BOOST_AUTO_TEST_CASE(windows_that_meet_are_an_overlap_and_reads_may_share) {
  std::vector<tb::history_event> e;
  hold(e, 1, "a", 10, 0, 5);
  hold(e, 2, "b", 11, 3, 8);  // inside a's window
  hold(e, 3, "r1", 0, 20, 30);
  hold(e, 4, "r2", 0, 21, 31);  // reads share
  auto const r = checked(e);
  BOOST_TEST(r.overlaps == 1);
  BOOST_TEST(r.overlapping.size() == 2u);
  BOOST_TEST_REQUIRE(r.first_overlap.has_value());
  BOOST_TEST(r.first_overlap->find("token 11") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_token_not_above_the_one_before_is_a_fall) {
  std::vector<tb::history_event> e;
  hold(e, 1, "a", 10, 0, 5);
  hold(e, 2, "b", 9, 6, 8);
  auto const r = checked(e);
  BOOST_TEST(r.token_falls == 1);
}

BOOST_AUTO_TEST_CASE(the_counter_run_finds_values_twice_missing_and_past_the_end) {
  std::vector<tb::history_event> e;
  write(e, 1, "a", 10, 1, "write_accepted");
  write(e, 1, "a", 10, 1, "write_accepted");
  write(e, 1, "a", 10, 3, "write_unknown");  // may have run: not missing
  write(e, 1, "a", 10, 5, "write_accepted");
  auto const r = checked(e, {}, {{"", 4}});
  auto const& c = r.counters.at("");
  BOOST_TEST(c.accepted == 3);
  BOOST_TEST(c.twice == 1);
  BOOST_TEST(c.missing == 2);  // 2 and 4
  BOOST_TEST(c.beyond == 1);   // 5
}

BOOST_AUTO_TEST_CASE(what_a_history_never_shows_is_a_problem_unless_its_process_was_killed) {
  std::vector<tb::history_event> e;
  hold(e, 1, "a", 10, 0, 0, "");  // never ended
  e.push_back({.t_ns = 1'000'000, .pid = 2, .event = "released", .owner = "b", .token = 7});  // never granted
  BOOST_TEST(checked(e).problems.size() == 2u);
  auto const killed = checked(e, {.permits = false, .killed_at = {{1, 500'000}}});
  BOOST_TEST(killed.problems.size() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
