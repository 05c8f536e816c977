// Leased permits across real processes (`redisync stress --kind permits`): a holder killed or
// stopped past its lease gives its permits back within the lease, judged by Redis, and never more
// holders than permits hold at once, by the tool's own count and by the processes' histories.

#include "support/lock_fixture.hpp"
#include "support/stress_process.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <iterator>
#include <map>

using namespace redisync::test;
using namespace std::chrono_literals;
using redisync::process::redis_server;

namespace {

constexpr std::int64_t permits_in_all = 2;
constexpr auto lease = 1000ms;
constexpr int workers = 3, iterations = 30;

// Three workers in each of four processes on two permits: every permit is wanted at all times, so
// a permit given back is taken at once. A hold lasts a fiftieth of the lease, well inside it.
// 30 iterations per worker keep the others busy for about 2.7 s in all.
std::vector<std::string> permit_args(std::string const& name, int per_worker = iterations) {
  return {"--lock", name, "--kind", "permits", "--permits", std::to_string(permits_in_all),
          "--workers", std::to_string(workers), "--iterations", std::to_string(per_worker),
          "--hold-ms", "20", "--watchdog-ms", std::to_string(lease.count())};
}

std::string holders_key(std::string const& name) { return "redisync_permits_holders:{" + name + "}"; }
std::string leases_key(std::string const& name) { return "redisync_permits_leases:{" + name + "}"; }

std::int64_t t_ns(boost::json::object const& e) { return e.at("t_ns").as_int64(); }
std::int64_t summary_int(stress_process const& p, std::string const& field) { return p.summary().at(field).as_int64(); }

// A permit on the server: its id, its token, and the end of its lease by the server's clock.
struct server_permit {
  std::string id;
  std::uint64_t token;
  std::int64_t lease_left_ms;
};

// A permit's id is '<owner>:p<n>' and an owner's '<client>:<n>': a process's permits are the ones
// that start with its client's id, read from the owner of any line of its history.
std::string client_id_of(stress_process const& p) {
  std::string const owner{p.history().at(0).at("owner").as_string()};
  return owner.substr(0, owner.find(':'));
}

std::vector<server_permit> permits_held_by(redis_server const& redis, std::string const& name,
                                           std::string const& client_id) {
  std::vector<server_permit> out;
  auto const now = redis.command({"TIME"});
  auto const now_ms = std::stoll(std::string{now.elements()[0].text()}) * 1000 +
                      std::stoll(std::string{now.elements()[1].text()}) / 1000;
  auto const holders = redis.command({"HGETALL", holders_key(name)});
  auto const& h = holders.elements();
  for (std::size_t i = 0; i + 1 < h.size(); i += 2) {
    std::string const id{h[i].text()}, value{h[i + 1].text()};
    if (!id.starts_with(client_id + ":")) continue;
    auto const ends = redis.command({"ZSCORE", leases_key(name), id});
    auto const left = ends.is_null() ? 0 : std::stoll(std::string{ends.text()}) - now_ms;
    out.push_back({id, std::stoull(value.substr(value.find(':') + 1)), left});
  }
  return out;
}

// Whether the process is stopped (state T in /proc): a SIGSTOP is not in effect when kill returns.
bool is_stopped(std::int64_t pid) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/stat"};
  std::string stat{std::istreambuf_iterator<char>{in}, {}};
  auto const comm_end = stat.rfind(')');
  return comm_end != std::string::npos && comm_end + 2 < stat.size() && stat[comm_end + 2] == 'T';
}

struct stopped_holder {
  std::int64_t stopped_at;  // CLOCK_MONOTONIC ns: it renews nothing from then on
  std::vector<server_permit> permits;

  std::int64_t longest_lease_left_ms() const {
    return std::ranges::max(permits, {}, &server_permit::lease_left_ms).lease_left_ms;
  }
};

// Stops `p` while it holds permits on the server. A hold can end between any look at it and the
// signal, so the look comes after the stop, and a stop that caught no hold is undone and tried
// again at its next grant.
stopped_holder stop_while_holding(stress_process& p, redis_server const& redis, std::string const& name) {
  std::size_t grants = 0;
  for (int attempt = 0; attempt < 100; ++attempt) {
    BOOST_TEST_REQUIRE(poll_until([&] { return p.events("acquired").size() > grants; }, 20s));
    auto const history = p.history();
    grants = redisync::test::events(history, "acquired").size();
    auto const pid = history.at(0).at("pid").as_int64();
    p.signal(SIGSTOP);
    BOOST_TEST_REQUIRE(poll_until([&] { return is_stopped(pid); }, 5s));
    auto const at = monotonic_ns();
    auto held = permits_held_by(redis, name, client_id_of(p));
    if (!held.empty()) return {at, std::move(held)};
    p.signal(SIGCONT);
  }
  BOOST_TEST_REQUIRE(false, "the process was never caught holding a permit");
  return {};
}

// When (CLOCK_MONOTONIC ns) none of `permits` is among the holders any more: they were given back.
std::int64_t wait_given_back(redis_server const& redis, std::string const& name,
                             std::vector<server_permit> const& permits) {
  BOOST_TEST_REQUIRE(poll_until(
      [&] {
        for (auto const& p : permits) {
          if (redis.command({"HEXISTS", holders_key(name), p.id}).integer() == 1) return false;
        }
        return true;
      },
      10s));
  return monotonic_ns();
}

// A hold as the histories show it, from its grant logged to the release about to be sent, cut at
// the deadline it was granted with: inside it no other holder can count its permit.
struct hold_window {
  std::int64_t from, to;
};

// The holds of one process; those without an end (it was killed, or is still holding) end at
// `open_until` or their deadline, whichever comes first.
std::vector<hold_window> hold_windows(std::vector<boost::json::object> const& history, std::int64_t open_until) {
  std::vector<hold_window> out;
  std::map<std::uint64_t, std::size_t> open;  // token -> its window
  for (auto const& e : history) {
    auto const kind = e.at("event").as_string();
    auto const token = e.at("token").to_number<std::uint64_t>();
    if (kind == "acquired") {
      open[token] = out.size();
      out.push_back({t_ns(e), e.at("valid_until_ns").as_int64()});
    } else if (kind == "releasing") {
      if (auto const w = open.find(token); w != open.end()) {
        out[w->second].to = std::min(out[w->second].to, t_ns(e));
        open.erase(w);
      }
    }
  }
  for (auto const& [token, index] : open) out[index].to = std::min(out[index].to, open_until);
  return out;
}

// The most windows open at one instant at or after `since`: the most is reached where one opens.
std::int64_t most_at_once(std::vector<hold_window> const& windows, std::int64_t since = 0) {
  auto const count_at = [&](std::int64_t t) {
    return std::count_if(windows.begin(), windows.end(), [&](auto const& w) { return w.from <= t && t < w.to; });
  };
  std::int64_t most = count_at(since);
  for (auto const& w : windows) {
    if (w.from >= since) most = std::max<std::int64_t>(most, count_at(w.from));
  }
  return most;
}

void append(std::vector<hold_window>& to, std::vector<hold_window> const& more) {
  to.insert(to.end(), more.begin(), more.end());
}

// A survivor: it finished every one of its iterations, never lost a hold, and never saw more
// holders than permits.
void check_survivor(stress_process const& p, int per_worker = iterations) {
  BOOST_TEST(p.exit_code() == 0);
  BOOST_TEST_REQUIRE(p.has_summary());
  BOOST_TEST(summary_int(p, "errors") == 0);
  BOOST_TEST(summary_int(p, "acquired") == workers * per_worker);
  BOOST_TEST(summary_int(p, "released") == summary_int(p, "acquired"));
  BOOST_TEST(summary_int(p, "lost") == 0);
  BOOST_TEST(summary_int(p, "overlaps") == 0);
  BOOST_TEST(summary_int(p, "max_holders") <= permits_in_all);
}

// Once every process is done: all the permits are free, by `inspect` and on the server.
void check_all_free(redis_server const& redis, temp_dir const& dir, std::string const& name) {
  child inspect{REDISYNC_TOOL_PATH, {"inspect", "--redis", redis.url(), name, "--json"}, dir.path / "inspect.out"};
  BOOST_TEST_REQUIRE(inspect.wait(10s));
  BOOST_TEST(inspect.exit_code() == 0);
  auto const shown = inspect.lines().at(0);
  BOOST_TEST(shown.at("type").as_string() == "permits");
  BOOST_TEST(shown.at("permits").as_int64() == permits_in_all);
  BOOST_TEST(shown.at("permits_free").as_int64() == permits_in_all);
  BOOST_TEST(shown.at("holders").as_array().empty());
  BOOST_TEST(redis.command({"HGET", name, "permits"}).text() == std::to_string(permits_in_all));
  BOOST_TEST(redis.command({"EXISTS", leases_key(name), holders_key(name)}).integer() == 0);
  expect_nothing_left(redis, {name, name + ":counter", name + ":readers"});
}

std::int64_t counter_of(redis_server const& redis, std::string const& name) {
  return std::stoll(std::string{redis.command({"GET", name + ":counter"}).text()});
}

}  // namespace

BOOST_AUTO_TEST_SUITE(permits_processes)

BOOST_AUTO_TEST_CASE(a_killed_holders_permits_come_back_within_its_lease_and_no_more_than_n_ever_hold) {
  redis_server redis;
  temp_dir dir;
  std::string const name = "perm:killed";
  auto group = start_stress(redis.url(), permit_args(name), dir.path, 4);
  auto& victim = *group[0];
  // Caught holding while stopped, then killed without a SIGCONT first (kill_hard sends one), so
  // that it renews nothing after the stop.
  auto const stopped = stop_while_holding(victim, redis, name);
  victim.signal(SIGKILL);
  auto const killed_at = monotonic_ns();
  victim.kill_hard();  // dead already: this only reaps it
  auto const back_at = wait_given_back(redis, name, stopped.permits);
  auto const back_ms = (back_at - stopped.stopped_at) / 1'000'000;
  BOOST_TEST_MESSAGE("killed holding " << stopped.permits.size() << " permit(s), lease left "
                                       << stopped.longest_lease_left_ms() << " ms by the server's clock; back "
                                       << back_ms << " ms after it stopped renewing (lease " << lease.count()
                                       << " ms)");
  // The lease, counted from the last renewal before the stop, and a waiter's wake-up.
  BOOST_TEST(back_ms <= lease.count() + 1000);

  std::vector<stress_process*> survivors;
  for (std::size_t i = 1; i < group.size(); ++i) survivors.push_back(group[i].get());
  std::int64_t survivors_acquired = 0, max_holders = 0;
  for (auto* p : survivors) {
    BOOST_TEST_REQUIRE(p->wait(45s));
    check_survivor(*p);
    survivors_acquired += summary_int(*p, "acquired");
    max_holders = std::max(max_holders, summary_int(*p, "max_holders"));
  }
  BOOST_TEST(max_holders == permits_in_all);  // the permits were shared, not taken one at a time

  // Across every process, the killed one's holds open until its death.
  std::vector<hold_window> windows = hold_windows(victim.history(), killed_at);
  for (auto* p : survivors) append(windows, hold_windows(p->history(), monotonic_ns()));
  auto const most = most_at_once(windows);
  BOOST_TEST_MESSAGE("most holders at once: " << max_holders << " by the tool's count, " << most
                                             << " by the histories");
  BOOST_TEST(most <= permits_in_all);

  // Each hold INCRs once, after its grant is logged and before its release is: the killed
  // process's count lies between its releases and its grants logged.
  auto const counter = counter_of(redis, name);
  auto const victim_history = victim.history();
  auto const victim_granted = static_cast<std::int64_t>(redisync::test::events(victim_history, "acquired").size());
  auto const victim_done = static_cast<std::int64_t>(redisync::test::events(victim_history, "releasing").size());
  BOOST_TEST(counter >= survivors_acquired + victim_done);
  BOOST_TEST(counter <= survivors_acquired + victim_granted);
  check_all_free(redis, dir, name);
}

BOOST_AUTO_TEST_CASE(a_holder_stopped_past_its_lease_loses_its_permit_to_the_others_and_reports_it_lost) {
  redis_server redis;
  temp_dir dir;
  std::string const name = "perm:stopped";
  // The others must still be at work when the stopped holder's lease ends, a second or more after
  // a stop that may come late (it waits to catch the holder holding, and on a busy host that took
  // long enough once for 100 iterations, ~9 s, to end first): 200 iterations last ~18 s.
  constexpr int long_run = 200;
  auto group = start_stress(redis.url(), permit_args(name, long_run), dir.path, 4);
  auto& victim = *group[0];
  std::vector<stress_process*> survivors;
  for (std::size_t i = 1; i < group.size(); ++i) survivors.push_back(group[i].get());
  auto const survivor_windows = [&] {
    std::vector<hold_window> out;
    for (auto* p : survivors) append(out, hold_windows(p->history(), monotonic_ns()));
    return out;
  };

  auto const stopped = stop_while_holding(victim, redis, name);
  auto const back_at = wait_given_back(redis, name, stopped.permits);
  // The others hold every permit at once while it is still stopped: its permit was taken, not
  // only counted free.
  BOOST_TEST_REQUIRE(
      poll_until([&] { return most_at_once(survivor_windows(), stopped.stopped_at) == permits_in_all; }, 20s));
  auto const resumed_at = monotonic_ns();
  victim.signal(SIGCONT);
  auto const back_ms = (back_at - stopped.stopped_at) / 1'000'000;
  BOOST_TEST_MESSAGE("stopped holding " << stopped.permits.size() << " permit(s), lease left "
                                        << stopped.longest_lease_left_ms() << " ms; taken back "
                                        << back_ms << " ms after the stop (lease " << lease.count()
                                        << " ms); resumed " << (resumed_at - stopped.stopped_at) / 1'000'000
                                        << " ms after the stop");
  BOOST_TEST(back_ms <= lease.count() + 1000);

  wait_for_group(group, 90s);
  std::int64_t acquired = 0, max_holders = 0;
  for (auto* p : survivors) {
    check_survivor(*p, long_run);
    acquired += summary_int(*p, "acquired");
    max_holders = std::max(max_holders, summary_int(*p, "max_holders"));
  }
  // The stopped process: every hold it had at the stop, and had logged, ended `lost`; it counted
  // no hold twice and saw no more holders than permits.
  BOOST_TEST(victim.exit_code() == 0);
  BOOST_TEST_REQUIRE(victim.has_summary());
  auto const history = victim.history();
  std::int64_t lost_at_stop = 0;
  for (auto const& permit : stopped.permits) {
    auto const matches = [&](std::string_view kind) {
      return std::ranges::count_if(history, [&](auto const& e) {
        return e.at("event").as_string() == kind && e.at("token").template to_number<std::uint64_t>() == permit.token;
      });
    };
    if (matches("acquired") == 0) continue;  // stopped between its grant and the reply
    BOOST_TEST(matches("lost") == 1, "token " << permit.token);
    BOOST_TEST(matches("released") == 0, "token " << permit.token);
    for (auto const& e : redisync::test::events(history, "lost")) {
      if (e.at("token").to_number<std::uint64_t>() == permit.token) BOOST_TEST(t_ns(e) > resumed_at);
    }
    ++lost_at_stop;
  }
  BOOST_TEST(lost_at_stop >= 1);
  BOOST_TEST(summary_int(victim, "lost") >= lost_at_stop);
  BOOST_TEST(summary_int(victim, "acquired") == summary_int(victim, "released") + summary_int(victim, "lost"));
  BOOST_TEST(summary_int(victim, "errors") == 0);
  BOOST_TEST(summary_int(victim, "overlaps") == 0);
  BOOST_TEST(summary_int(victim, "max_holders") <= permits_in_all);
  max_holders = std::max(max_holders, summary_int(victim, "max_holders"));
  acquired += summary_int(victim, "acquired");

  std::vector<hold_window> windows = survivor_windows();
  append(windows, hold_windows(history, monotonic_ns()));
  auto const most = most_at_once(windows);
  BOOST_TEST_MESSAGE("most holders at once: " << max_holders << " by the tool's count, " << most
                                             << " by the histories; the stopped process lost "
                                             << summary_int(victim, "lost") << " hold(s)");
  BOOST_TEST(most <= permits_in_all);
  // Every hold, the lost ones too, INCRs once: nothing was counted twice.
  BOOST_TEST(counter_of(redis, name) == acquired);
  check_all_free(redis, dir, name);
}

BOOST_AUTO_TEST_SUITE_END()
