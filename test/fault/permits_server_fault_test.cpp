// Server faults under load on leased permits: three `redisync stress --kind permits` processes of
// two workers each on two permits (test/support/fault_scenario.hpp's run, the lock tier's load and
// lease) while the server refuses writes or forgets everything. Checked from the summaries and the
// histories: no crash, every process done with all its holds within its bound, every hold ended
// once (released or lost), never more holders than permits (by the tool's count and by the
// histories), and nothing of the semaphore left without an expiry within its lease but its
// definition.

#include "testbed/redis_server.hpp"
#include "support/fault_scenario.hpp"
#include "support/lock_fixture.hpp"
#include "support/processes.hpp"
#include "support/stress_process.hpp"

#include <redisync/error.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using redisync::process::redis_server;
using redisync::test::fault_lease;
using redisync::test::fault_time;
using redisync::test::lock_server;
using redisync::test::poll_until;
using redisync::test::stress_group;
using redisync::test::stress_process;

namespace {

constexpr std::int64_t permits_in_all = 2;
// fault_load's two workers of twenty holds: with --retry-ms, a failed acquire is tried again, so
// every process ends with all of them.
constexpr std::int64_t holds_per_process = 2 * 20;

std::string leases_key(std::string const& name) { return "redisync_permits_leases:{" + name + "}"; }
std::string holders_key(std::string const& name) { return "redisync_permits_holders:{" + name + "}"; }
std::string token_key(std::string const& name) { return "redisync_permits_token:{" + name + "}"; }

std::int64_t t_ns(boost::json::object const& e) { return e.at("t_ns").as_int64(); }
std::int64_t summary_int(stress_process const& p, std::string const& field) { return p.summary().at(field).as_int64(); }
bool is(boost::json::object const& e, std::string_view kind) { return e.at("event").as_string() == kind; }

// A hold as a history shows it, from its grant logged to the release about to be sent, cut at the
// deadline it was granted with: inside it no other holder can count its permit.
struct hold_window {
  std::int64_t from, to;
};

// Every hold of one finished process ended exactly once, released or lost, after its release was
// sent; returns the holds' windows.
std::vector<hold_window> ended_holds(stress_process const& p, std::string const& tag) {
  std::vector<hold_window> out;
  // A worker is one owner and holds one permit at a time: the owner and the token name a hold.
  std::map<std::pair<std::string, std::uint64_t>, std::size_t> open;
  std::map<std::pair<std::string, std::uint64_t>, bool> releasing;
  for (auto const& e : p.history()) {
    auto const key = std::pair{std::string{e.at("owner").as_string()}, e.at("token").to_number<std::uint64_t>()};
    if (is(e, "acquired")) {
      BOOST_TEST(!open.contains(key), tag << ": token " << key.second << " granted twice to " << key.first);
      open[key] = out.size();
      releasing[key] = false;
      out.push_back({t_ns(e), e.at("valid_until_ns").as_int64()});
    } else if (is(e, "releasing")) {
      if (auto const w = open.find(key); w != open.end()) {
        out[w->second].to = std::min(out[w->second].to, t_ns(e));
        releasing[key] = true;
      }
    } else if (is(e, "released") || is(e, "lost")) {
      auto const w = open.find(key);
      BOOST_TEST_REQUIRE((w != open.end() && releasing[key]),
                         tag << ": a hold ended without being acquired and released, or twice: " << e.at("event"));
      open.erase(w);
    }
  }
  BOOST_TEST(open.empty(), tag << ": " << open.size() << " hold(s) never ended");
  return out;
}

// The most windows open at one instant: the most is reached where one opens.
std::int64_t most_at_once(std::vector<hold_window> const& windows) {
  std::int64_t most = 0;
  for (auto const& w : windows) {
    most = std::max<std::int64_t>(most, std::ranges::count_if(windows, [&](auto const& o) {
                                    return o.from <= w.from && w.from < o.to;
                                  }));
  }
  return most;
}

struct permits_fault {
  std::string name;
  std::string url;
  std::function<void(stress_group const&)> inject;  // the fault, returning when it is over
  std::function<void(stress_group const&)> also_check = {};  // what this fault promises besides
};

// Runs the stress processes on `s.name`'s permits through the fault and checks what every fault
// must leave: see the top of the file.
void run_permits_with_fault(lock_server const& redis, permits_fault const& s) {
  auto const args =
      redisync::test::fault_load(s.name, {"--kind", "permits", "--permits", std::to_string(permits_in_all)});
  auto fault_over = std::chrono::steady_clock::now();
  std::int64_t fault_at = 0;
  auto const inject = [&](stress_group const& group) {
    fault_at = redisync::test::monotonic_ns();
    s.inject(group);
    fault_over = std::chrono::steady_clock::now();
  };
  // The fault begins once every process is connected and waiting: permits go from worker to worker
  // inside a process (config::max_local_handoffs in a row), so the last process to start may be let
  // in only when the others are nearly done, and waiting for its first hold would leave the fault
  // with one process to meet.
  redisync::test::run_through_fault({s.url, args, 3, "wait"}, inject, [&](stress_group const& group) {
    auto const after_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - fault_over).count();
    std::int64_t acquired = 0, released = 0, lost = 0, errors = 0, max_holders = 0;
    std::vector<hold_window> windows;
    std::string granted_after;  // per process: the holds granted once the fault had begun
    for (std::size_t i = 0; i < group.size(); ++i) {
      auto const& p = *group[i];
      auto const tag = "p" + std::to_string(i);
      BOOST_TEST((p.exit_code() == 0 || p.exit_code() == 1), tag << ": exit code " << p.exit_code());
      BOOST_TEST_REQUIRE(p.has_summary(), tag << ": no summary");
      BOOST_TEST(summary_int(p, "acquired") == holds_per_process, tag);
      BOOST_TEST(summary_int(p, "acquired") == summary_int(p, "released") + summary_int(p, "lost"), tag);
      BOOST_TEST(summary_int(p, "overlaps") == 0, tag);
      BOOST_TEST(summary_int(p, "max_holders") <= permits_in_all, tag);
      auto const mine = ended_holds(p, tag);
      BOOST_TEST(static_cast<std::int64_t>(mine.size()) == summary_int(p, "acquired"), tag);
      windows.insert(windows.end(), mine.begin(), mine.end());
      granted_after += (i == 0 ? "" : "/") + std::to_string(std::ranges::count_if(mine, [&](auto const& w) {
                         return w.from >= fault_at;
                       }));
      acquired += summary_int(p, "acquired");
      released += summary_int(p, "released");
      lost += summary_int(p, "lost");
      errors += summary_int(p, "errors");
      max_holders = std::max(max_holders, summary_int(p, "max_holders"));
    }
    auto const most = most_at_once(windows);
    BOOST_TEST_MESSAGE(s.name << ": " << acquired << " holds (" << released << " released, " << lost << " lost), "
                              << errors << " errors; most holders at once " << max_holders << " by the tool, "
                              << most << " by the histories; holds granted after the fault began " << granted_after
                              << "; all done " << after_ms << " ms after the fault");
    BOOST_TEST(most <= permits_in_all);

    // The definition stays, without an expiry; the leases and holders go a lease after the last
    // permit at most, and so does the fencing counter (it is not persistent by default).
    BOOST_TEST(redis({"HGET", s.name, "permits"}).text() == std::to_string(permits_in_all));
    BOOST_TEST(redis({"PTTL", s.name}).integer() == -1);
    for (auto const& key : {leases_key(s.name), holders_key(s.name), token_key(s.name)}) {
      auto const pttl = redis({"PTTL", key}).integer();
      BOOST_TEST((pttl == -2 || (pttl > 0 && pttl <= fault_lease.count())), key << ": PTTL " << pttl);
    }
    if (s.also_check) s.also_check(group);
  });
}

void run_permits_with_fault(redis_server const& redis, permits_fault const& s) {
  run_permits_with_fault([&redis](std::vector<std::string> const& args) { return redis.command(args); }, s);
}

std::string const too_many_permits = redisync::make_error_code(redisync::error::too_many_permits).message();

// The first error of `p` at or after `since` (CLOCK_MONOTONIC ns) saying that the semaphore has
// fewer permits than asked for; 0 if none yet.
std::int64_t first_too_many_permits(stress_process const& p, std::int64_t since) {
  for (auto const& e : p.history()) {
    // (The message goes on with the server's words.)
    if (is(e, "error") && t_ns(e) >= since && e.at("detail").as_string().starts_with(too_many_permits)) return t_ns(e);
  }
  return 0;
}

// Holds granted and not yet ended in `p`'s history.
std::int64_t open_holds(stress_process const& p) {
  auto const h = p.history();
  return std::ranges::count_if(h, [](auto const& e) { return is(e, "acquired"); }) -
         std::ranges::count_if(h, [](auto const& e) { return is(e, "released") || is(e, "lost"); });
}

// The holds of `p` that a restart at `t`, with every process stopped over it, must have ended lost
// but that ended otherwise, each as its owner, token and end: those granted before `t` whose release
// had not been sent by then (it went to the restarted server, which no longer has them), but for
// those whose release was sent again after its outcome was lost with the connection (the tool's
// `release_repeated`: such a release may have run, and is told released).
std::vector<std::string> erased_but_not_lost(stress_process const& p, std::int64_t t) {
  std::map<std::pair<std::string, std::uint64_t>, std::string> erased;  // hold -> how it ended
  for (auto const& e : p.history()) {
    auto const key = std::pair{std::string{e.at("owner").as_string()}, e.at("token").to_number<std::uint64_t>()};
    if (is(e, "acquired") && t_ns(e) < t) {
      erased[key] = "never ended";
    } else if ((is(e, "releasing") && t_ns(e) < t) || is(e, "release_repeated")) {
      erased.erase(key);
    } else if ((is(e, "released") || is(e, "lost")) && erased.contains(key)) {
      erased[key] = std::string{e.at("event").as_string()};
    }
  }
  std::vector<std::string> out;
  for (auto const& [hold, ended] : erased) {
    if (ended != "lost") out.push_back(hold.first + " token " + std::to_string(hold.second) + ": " + ended);
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(permits_server_faults)

BOOST_AUTO_TEST_CASE(a_demoted_master_answers_readonly_and_permits_holders_never_exceed_the_permits) {
  redis_server master;
  redis_server replica{redisync::process::replica_of(master.port())};
  BOOST_TEST_REQUIRE(
      poll_until([&] { return redisync::test::role(replica) == "slave" && redisync::test::linked(replica); }, 10s));
  // The clients stay on the old master, which refuses every acquire, renewal and release with
  // READONLY until it is promoted back. FAILOVER waits for the replica to catch up: no lease is
  // lost with the data, so the histories' count holds across it.
  run_permits_with_fault(master, {"perm-readonly", master.url(), [&](stress_group const&) {
                                    redisync::test::failover(master, replica);
                                    std::this_thread::sleep_for(fault_time);
                                    redisync::test::failover(replica, master);
                                  }});
}

BOOST_AUTO_TEST_CASE(out_of_memory_refuses_acquires_and_renewals_and_permits_holders_never_exceed_the_permits) {
  redis_server redis;
  run_permits_with_fault(redis, {"perm-oom", redis.url(), [&](stress_group const&) {
                                   redis.command({"CONFIG", "SET", "maxmemory", "1"});
                                   std::this_thread::sleep_for(fault_time);
                                   redis.command({"CONFIG", "SET", "maxmemory", "0"});
                                 }});
}

// A restart without persistence forgets the leases and the definition (the hash `name`, which has
// no expiry because it is the semaphore itself). Nobody but the application knows how many permits
// there were, so what an experienced user expects is what happens here: every acquire fails with
// error::too_many_permits, whose message says to set the permits first, rather than waiting forever
// or granting against a guessed number; the holds from before the restart are told lost; and once
// the application sets the permits again (as it would at its start: here the test, with
// try_set_permits, which finds none set), the waiters go on without being restarted. The test sets
// them only once every process has reported the cause and every hold from before the restart has
// ended, so that the holders from before and after never meet and the count of holders at once is
// checked across the restart too; a re-set while old holders still believed they held would let
// `permits` more in, which no lease on the server could stop (the erased leases are outside the
// promise, as for a lock). The processes are stopped over the kill and the restart, so that which
// holds the restart erased is known exactly from the histories, and each of them is checked.
BOOST_AUTO_TEST_CASE(a_restart_without_persistence_reports_the_lost_definition_until_the_permits_are_set_again) {
  redis_server redis;
  std::string const name = "perm-restart";
  std::int64_t killed_at = 0, restarted_at = 0, reset_at = 0, held_at_kill = 0;
  // Per process: its first too_many_permits after the restart; 0 if it needed no permit any more
  // (the processes start one after the other, and the first may be done by the time of the fault).
  std::vector<std::int64_t> told_at;
  auto const restart_and_reset = [&](stress_group const& group) {
    // Both permits held (and, with six workers on two permits, the other workers waiting).
    BOOST_TEST_REQUIRE(
        poll_until([&] { return redis.command({"HGET", holders_key(name), "used"}).text() == "2"; }, 10s));
    // The processes stopped first: until they go on, nothing of theirs reaches Redis, so a release
    // whose `releasing` is not logged before the kill goes to the restarted server, however the kill
    // would have met it.
    redisync::test::stop_group(group, 5s);
    killed_at = redisync::test::monotonic_ns();
    redis.kill_hard();
    for (auto const& p : group) held_at_kill += open_holds(*p);
    redis.start();
    restarted_at = redisync::test::monotonic_ns();
    redisync::test::resume_group(group);
    BOOST_TEST_MESSAGE(name << ": " << held_at_kill << " hold(s) open in the histories at the kill; redis back "
                            << (restarted_at - killed_at) / 1'000'000 << " ms after");
    // Every process still at work was told why it gets no permit, and every hold from before the
    // restart has ended.
    auto const told_and_ended = [&] {
      for (auto const& p : group) {
        bool const told_or_done = first_too_many_permits(*p, restarted_at) != 0 || p->has_summary();
        if (!told_or_done || open_holds(*p) != 0) return false;
      }
      return true;
    };
    if (!poll_until(told_and_ended, 10s)) {
      for (std::size_t i = 0; i < group.size(); ++i) {
        auto const h = group[i]->history();
        BOOST_TEST_MESSAGE("p" << i << ": told " << (first_too_many_permits(*group[i], restarted_at) != 0)
                               << ", finished " << group[i]->has_summary() << ", " << open_holds(*group[i])
                               << " hold(s) open, last event " << (h.empty() ? boost::json::object{} : h.back()));
      }
      BOOST_TEST_REQUIRE(false,
                         "a process at work was not told the cause, or a hold from before the restart never ended");
    }
    for (auto const& p : group) told_at.push_back(first_too_many_permits(*p, restarted_at));
    auto const told = std::ranges::count_if(told_at, [](auto t) { return t != 0; });
    BOOST_TEST_REQUIRE(told >= 1, "no process was still at work after the restart");
    BOOST_TEST(redis.command({"EXISTS", name}).integer() == 0);
    reset_at = redisync::test::monotonic_ns();
    redisync::test::run_client(redisync::test::fast_config(redis), [&](auto&, redisync::client& c)
                                                                       -> boost::asio::awaitable<void> {
      auto const set = co_await c.new_owner().permits(name).try_set_permits(permits_in_all, boost::asio::use_awaitable);
      BOOST_TEST(set);  // nobody else set them: the processes do not guess
    });
    BOOST_TEST_MESSAGE(name << ": " << told << " of " << group.size() << " processes told the cause (the others "
                            << "had finished) and every old hold ended " << (reset_at - restarted_at) / 1'000'000
                            << " ms after the restart; permits set again");
  };
  auto const after_restart = [&](stress_group const& group) {
    std::int64_t lost = 0;
    std::size_t repeated = 0;
    for (std::size_t i = 0; i < group.size(); ++i) {
      auto const history = group[i]->history();
      // Told that the permits are gone, a process was granted none until they were set again.
      auto const granted_meanwhile = std::ranges::count_if(history, [&](auto const& e) {
        return told_at[i] != 0 && is(e, "acquired") && t_ns(e) >= told_at[i] && t_ns(e) < reset_at;
      });
      BOOST_TEST(granted_meanwhile == 0,
                 "p" << i << ": granted " << granted_meanwhile << " while the permits were unset");
      // A hold the restart erased ends lost, never released.
      std::string not_lost;
      for (auto const& hold : erased_but_not_lost(*group[i], killed_at)) not_lost += "\n  " + hold;
      BOOST_TEST(not_lost.empty(), "p" << i << ": holds the restart erased that did not end lost:" << not_lost);
      lost += summary_int(*group[i], "lost");
      repeated += group[i]->events("release_repeated").size();
    }
    BOOST_TEST_MESSAGE(held_at_kill << " hold(s) open at the kill, " << lost << " lost; " << repeated
                                    << " release(s) sent again after their outcome was lost");
  };
  run_permits_with_fault(redis, {name, redis.url(), restart_and_reset, after_restart});
}

BOOST_AUTO_TEST_SUITE_END()
