#pragma once

// `redisync stress` in its own process (its JSON summary in a file, its events in a history), and
// the checks every fault test makes from the histories of several of them.

#include "testbed/history_checks.hpp"
#include "testbed/redis_server.hpp"
#include "testbed/stress_client.hpp"
#include "support/processes.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace redisync::test {

class stress_process {
 public:
  // Its stderr goes to a file in `dir`, shown only if the test fails: the log of a passing fault
  // test is not full of the errors that the faults are meant to cause.
  stress_process(std::string const& url, std::vector<std::string> args, std::filesystem::path dir,
                 std::string const& tag)
      : tag_{tag}, history_{dir / (tag + ".history")}, err_{dir / (tag + ".err")},
        process_{REDISYNC_TOOL_PATH, testbed::stress_command(url, std::move(args), history_), dir / (tag + ".out"), err_} {}
  ~stress_process() {
    if (!current_test_passing()) BOOST_TEST_MESSAGE("stress process " << tag_ << ", stderr:\n" << tail_of(err_, 30));
  }
  stress_process(stress_process const&) = delete;
  stress_process& operator=(stress_process const&) = delete;

  void signal(int sig) const { process_.signal(sig); }
  void kill_hard() { process_.kill_hard(); }
  bool wait(std::chrono::milliseconds limit) { return process_.wait(limit); }
  bool stop(std::chrono::milliseconds limit) { return process_.stop(limit); }
  int exit_code() const { return process_.exit_code(); }
  boost::json::object summary() const { return process_.lines().at(0); }
  bool has_summary() const { return !process_.lines().empty(); }
  std::vector<boost::json::object> history() const { return json_lines(history_); }
  std::vector<boost::json::object> events(std::string_view kind) const {
    return redisync::test::events(history(), kind);
  }

 private:
  std::string tag_;
  std::filesystem::path history_, err_;
  child process_;
};

using stress_group = std::vector<std::unique_ptr<stress_process>>;

// `count` processes running `redisync stress` with `args`, tagged p0, p1, ...
inline stress_group start_stress(std::string const& url, std::vector<std::string> const& args,
                                 std::filesystem::path const& dir, int count) {
  stress_group out;
  for (int i = 0; i < count; ++i) {
    out.push_back(std::make_unique<stress_process>(url, args, dir, fmt::format("p{}", i)));
  }
  return out;
}

// The events of `history` about multi-lock member `name`: per name, a multi-lock's history reads
// like a lock's.
inline std::vector<boost::json::object> of_member(std::vector<boost::json::object> const& history,
                                                  std::string const& name) {
  std::vector<boost::json::object> out;
  for (auto const& e : history) {
    if (auto const* n = e.if_contains("name"); n && n->as_string() == name) out.push_back(e);
  }
  return out;
}

// How many holds the processes of `group` have logged as granted so far.
inline std::size_t acquired_so_far(stress_group const& group) {
  std::size_t n = 0;
  for (auto const& p : group) n += p->events("acquired").size();
  return n;
}

// Stops every process of `group`, each within `limit` (or fails the test): until resume_group,
// nothing of theirs reaches Redis, so a fault injected meanwhile meets each at a known point of its
// history.
inline void stop_group(stress_group const& group, std::chrono::milliseconds limit) {
  for (std::size_t i = 0; i < group.size(); ++i) {
    BOOST_TEST_REQUIRE(group[i]->stop(limit),
                       fmt::format("stress process p{} was not stopped within {} ms (SIGSTOP)", i, limit.count()));
  }
}

inline void resume_group(stress_group const& group) {
  for (auto const& p : group) p->signal(SIGCONT);
}

// Every fencing token granted in `group`'s histories after the moment `at` (CLOCK_MONOTONIC ns: a
// fault) is above every one granted before it; with `name`, the holds of that multi-lock member
// only. At least one hold was granted after it.
inline void expect_tokens_rise_across(stress_group const& group, std::int64_t at,
                                      std::optional<std::string> const& name = {}) {
  std::uint64_t before_max = 0;
  std::optional<std::uint64_t> after_min;
  for (auto const& p : group) {
    for (auto const& e : p->events("acquired")) {
      if (name && e.at("name").as_string() != *name) continue;
      auto const token = e.at("token").to_number<std::uint64_t>();
      if (e.at("t_ns").as_int64() < at) {
        before_max = std::max(before_max, token);
      } else {
        after_min = std::min(after_min.value_or(token), token);
      }
    }
  }
  BOOST_TEST_REQUIRE(after_min.has_value(), "no hold was granted after the fault");
  BOOST_TEST(*after_min > before_max);
}

// The longest time from `at` (CLOCK_MONOTONIC ns: a fault settled) on that the group's lock went
// without a new grant: to the first grant after `at`, and between grants after it (each hold is
// short and others wait, so a long gap is a lock that nobody could take). Empty if nothing was
// granted after `at`. Groups that take one lock in different ways (readers and writers) count
// together.
inline std::optional<std::chrono::milliseconds> longest_wait_for_a_grant_after(
    std::vector<stress_group const*> const& groups, std::int64_t at) {
  std::vector<std::int64_t> grants;
  for (auto const* group : groups) {
    for (auto const& p : *group) {
      for (auto const& e : p->events("acquired")) {
        if (auto const t = e.at("t_ns").as_int64(); t >= at) grants.push_back(t);
      }
    }
  }
  if (grants.empty()) return std::nullopt;
  std::ranges::sort(grants);
  std::int64_t longest = grants.front() - at;
  for (std::size_t i = 1; i < grants.size(); ++i) longest = std::max(longest, grants[i] - grants[i - 1]);
  return std::chrono::milliseconds{longest / 1'000'000};
}

// What the histories of a group say, once every process has exited.
struct stress_outcome {
  std::int64_t acquired = 0, released = 0, lost = 0, accepted = 0, rejected = 0, errors = 0;
  std::int64_t unknown = 0;  // fenced writes whose outcome a lost connection hid
};

// The test bed's checks (testbed/history_checks.hpp) over the histories of processes that ran on
// one lock and one fenced counter, as assertions:
//   - every hold ended exactly once, `released` or `lost` (a killed process's open holds end when
//     it died);
//   - no two holds inside their validity windows at once;
//   - fencing tokens of fresh holds strictly increase in the order they were granted (both this
//     and the windows only where one master took writes at a time);
//   - the counter is exact: every value from 1 to the counter's was written by one write that ran
//     or may have run (accepted, outcome unknown, or in flight when its process was killed), and
//     no two accepted writes wrote the same value.
class history_check {
 public:
  // One process's history; `killed_at`: when it was killed (CLOCK_MONOTONIC ns), if it was.
  void add(std::vector<boost::json::object> const& history, std::optional<std::int64_t> killed_at = {}) {
    for (std::size_t i = 0; i < history.size(); ++i) {
      events_.push_back(testbed::event_of(history[i], fmt::format("process {} line {}", processes_, i + 1)));
    }
    if (killed_at) {
      ++killed_;
      if (!history.empty()) reading_.killed_at[events_.back().pid] = *killed_at;
    }
    ++processes_;
  }

  // A finished process's summary line: its errors (the rest the history tells).
  void add_summary(boost::json::object const& s) { errors_ += s.at("errors").as_int64(); }

  // What a fault leaves checkable: a fault that erases the lock (FLUSHALL, a restart without
  // persistence) or leaves two masters taking writes for a while may let holds overlap and their
  // tokens arrive out of order, which is outside the promise, and an erasing fault takes the
  // counter along.
  struct checks {
    std::optional<std::int64_t> counter;  // the counter's final value
    bool windows = true;                  // one master at a time: windows apart, tokens in order
  };

  // The checks across processes.
  stress_outcome check(checks what) {
    std::stable_sort(events_.begin(), events_.end(), [](auto const& a, auto const& b) { return a.t_ns < b.t_ns; });
    auto const h = testbed::follow(events_, reading_);
    std::map<std::string, std::int64_t> finals;
    if (what.counter) finals[h.writes.empty() ? std::string{} : h.writes.front().name] = *what.counter;
    auto const r = testbed::check_history(h, finals);
    for (auto const& p : r.problems) BOOST_TEST(false, p);
    if (r.first_overlap) BOOST_TEST_MESSAGE("first overlap: " << *r.first_overlap);
    if (r.first_fall) BOOST_TEST_MESSAGE("first token out of order: " << *r.first_fall);
    if (what.windows) {
      BOOST_TEST(r.overlaps == 0, r.overlaps << " pairs of holds inside each other's validity windows");
      BOOST_TEST(r.token_falls == 0, r.token_falls << " fencing tokens not above the one granted before");
    } else {
      // With two masters at once, a grant on one can reach its owner after a later grant on the
      // other (a retried attempt confirmed late), so the order of arrival says nothing of the
      // order of issue; the fence then rests on the counter's check.
      if (r.overlaps > 0) BOOST_TEST_MESSAGE(r.overlaps << " pairs of holds inside each other's validity windows (outside the promise here)");
      if (r.token_falls > 0) BOOST_TEST_MESSAGE(r.token_falls << " fencing tokens arrived after a higher one (outside the promise here)");
    }
    stress_outcome out{.acquired = r.holds, .released = r.released, .lost = r.lost, .errors = errors_};
    for (auto const& [name, c] : r.counters) {
      out.accepted += c.accepted;
      out.rejected += c.rejected;
      out.unknown += c.unknown;
      if (!what.counter) continue;
      BOOST_TEST(c.twice == 0, c.twice << " accepted writes wrote a value another accepted write wrote");
      BOOST_TEST(c.beyond == 0, c.beyond << " accepted writes are missing from the counter, " << *what.counter);
      BOOST_TEST(c.missing == 0, "the counter, " << *what.counter << ", passed " << c.missing << " values no write wrote");
    }
    return out;
  }

  int killed() const { return killed_; }

 private:
  std::vector<testbed::history_event> events_;
  testbed::reading reading_;
  std::int64_t errors_ = 0;
  int processes_ = 0;
  int killed_ = 0;
};

// Waits until every process of the group has exited, within `limit` in all.
inline void wait_for_group(stress_group& group, std::chrono::milliseconds limit) {
  auto const deadline = std::chrono::steady_clock::now() + limit;
  for (auto& p : group) {
    auto const left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    BOOST_TEST_REQUIRE(p->wait(std::max(left, std::chrono::milliseconds{0})),
                       "a stress process did not finish within its bound");
  }
}

// For a group that has exited: no crash (exit code 0 or 1), then the checks of history_check.
// Returns the counts.
inline stress_outcome check_stress_group(stress_group const& group, history_check::checks what) {
  history_check check;
  for (auto const& p : group) {
    BOOST_TEST((p->exit_code() == 0 || p->exit_code() == 1), "exit code " << p->exit_code());
    check.add(p->history());
    check.add_summary(p->summary());
  }
  auto const out = check.check(what);
  BOOST_TEST(out.acquired == out.released + out.lost);
  return out;
}

}  // namespace redisync::test
