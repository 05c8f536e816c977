// The demo's coordination sections:
//   8. a latch: 4 processes count down a barrier of 5 and wait; the demo's own count-down, the last,
//      releases all 4 at once (their wake-ups read from their histories);
//   9. multi-locks: two processes take overlapping names in opposite orders, 50 times each, with no
//      deadlock and every name's counter exact;
//  10. leader election: 3 candidate processes, one leads; it is killed, the next leads within the
//      lease, and two observers in two clients see the same terms in the same order.

#include "cli/lab/demo/demo_coordination.hpp"

#include "cli/lab/demo/demo_children.hpp"
#include "testbed/monotonic.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>

#include <sys/wait.h>
#include <unistd.h>

namespace redisync::cli {

namespace asio = boost::asio;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

// The events of kind `event` in a history file (then removed).
std::vector<json::object> events_in(std::filesystem::path const& history, std::string_view event) {
  std::vector<json::object> out;
  std::ifstream in{history};
  for (std::string line; std::getline(in, line);) {
    boost::system::error_code ec;
    auto v = json::parse(line, ec);
    if (!ec && v.is_object() && v.as_object().at("event").as_string() == event) out.push_back(std::move(v.as_object()));
  }
  in.close();
  std::filesystem::remove(history);
  return out;
}

asio::awaitable<void> latch_section(client& c, demo_report& report, std::string const& url, std::string const& prefix) {
  auto const name = prefix + "barrier";
  auto const latch = c.latch(name + ":0");
  report.say("8. a latch {}:0 of 5: 4 processes count it down and wait; the demo counts down last", name);
  co_await latch.try_set_count(5, asio::use_awaitable);
  std::vector<std::tuple<pid_t, std::filesystem::path, std::filesystem::path>> waiters;
  for (int i = 0; i < 4; ++i) {
    auto out = temp_file(fmt::format("latch{}.out", i));
    auto history = temp_file(fmt::format("latch{}.history", i));
    pid_t const pid = spawn_stress(url, {"--kind", "latch", "--lock", name, "--permits", "5", "--iterations", "1"}, out, history);
    waiters.emplace_back(pid, std::move(out), std::move(history));
  }
  auto const all_wait = [&]() -> asio::awaitable<bool> { co_return co_await latch.count(asio::use_awaitable) == 1; };
  bool const waiting = co_await poll_until(all_wait, 10s, 5ms);
  auto const opened_at = process::monotonic_ns();
  co_await latch.count_down(asio::use_awaitable);
  std::vector<std::int64_t> woken_after_us;
  bool all_ok = waiting;
  for (auto& [pid, out, history] : waiters) {
    all_ok = stress_summary(pid, out).has_value() && all_ok;
    for (auto const& e : events_in(history, "opened")) woken_after_us.push_back((e.at("t_ns").as_int64() - opened_at) / 1000);
  }
  std::sort(woken_after_us.begin(), woken_after_us.end());
  bool const together = woken_after_us.size() == 4 && woken_after_us.back() < 1'000'000;
  report.record("a latch releases every process at once", all_ok && together,
                woken_after_us.size() == 4
                    ? fmt::format("4 processes woken {}-{} ms after the last count-down", woken_after_us.front() / 1000.0,
                                  woken_after_us.back() / 1000.0)
                    : fmt::format("{} of 4 processes woken", woken_after_us.size()));
}

asio::awaitable<void> multi_section(client& c, demo_report& report, std::string const& url, std::string const& prefix) {
  std::vector<std::string> const names{prefix + "acct:1", prefix + "acct:2", prefix + "acct:3"};
  auto const forward = fmt::format("{},{},{}", names[0], names[1], names[2]);
  auto const backward = fmt::format("{},{},{}", names[2], names[1], names[0]);
  report.say("9. two processes take multi-locks of {} and of {} (opposite orders), 50 times each", forward, backward);
  std::vector<std::pair<pid_t, std::filesystem::path>> procs;
  for (auto const& order : {forward, backward}) {
    auto out = temp_file(fmt::format("multi{}.out", procs.size()));
    procs.emplace_back(
        spawn_stress(url, {"--kind", "multi", "--lock", order, "--iterations", "50", "--hold-ms", "1"}, out), out);
  }
  auto const started = std::chrono::steady_clock::now();
  std::int64_t acquired = 0;
  bool all_ok = true;
  for (auto const& [pid, out] : procs) {
    auto const s = stress_summary(pid, out);
    all_ok = all_ok && s && s->at("errors").as_int64() == 0;
    if (s) acquired += s->at("acquired").as_int64();
  }
  auto const took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  bool exact = true;
  for (auto const& n : names) {
    resp::request get;
    get.push("GET", n + ":counter");
    auto const counted = number_in(co_await command(c, std::move(get)));
    exact = exact && counted == acquired;
    resp::request cleanup;
    cleanup.push("DEL", n + ":counter");
    co_await command(c, std::move(cleanup));
  }
  report.record("opposite-order multi-locks never deadlock", all_ok && exact && acquired == 100,
                fmt::format("{} multi-locks in {} ms, every name's counter exact", acquired, took.count()));
}

asio::awaitable<void> election_section(client& c, demo_report& report, std::string const& url,
                                       std::string const& prefix) {
  constexpr auto lease = 1000ms;
  auto const name = prefix + "election";
  report.say("10. election {}: 3 candidate processes ({} ms lease); the leader is killed (SIGKILL)", name,
             lease.count());
  client second{c.get_executor(), config_from_url(url)};
  second.start();
  co_await connect(second);
  std::vector<election_observer> observers{c.election(name).observe(), second.election(name).observe()};
  std::vector<std::pair<pid_t, std::filesystem::path>> candidates;
  for (int i = 0; i < 3; ++i) {
    auto out = temp_file(fmt::format("candidate{}.out", i));
    candidates.emplace_back(spawn_stress(url,
                                         {"--kind", "election", "--lock", name, "--iterations", "1", "--hold-ms",
                                          "60000", "--watchdog-ms", std::to_string(lease.count())},
                                         out),
                            std::move(out));
  }
  std::vector<std::vector<std::uint64_t>> terms(observers.size());
  auto const next_term = [&](std::size_t o) -> asio::awaitable<std::optional<leader_change>> {
    auto [ec, change] = co_await observers[o].next(10s, asio::as_tuple(asio::use_awaitable));
    if (ec) co_return std::nullopt;
    terms[o].push_back(change.term);
    co_return change;
  };
  // A candidate's value is `<pid>/<owner>`: the leader's says which process to kill.
  auto const first = co_await next_term(0);
  co_await next_term(1);  // both observers start at the first leader
  bool replaced = false;
  std::chrono::milliseconds after{};
  if (first) {
    auto const leader_pid = static_cast<pid_t>(std::stol(first->value.substr(0, first->value.find('/'))));
    ::kill(leader_pid, SIGKILL);
    auto const killed = std::chrono::steady_clock::now();
    auto const next = co_await next_term(0);
    after = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - killed);
    replaced = next && next->term > first->term;
    if (next) report.say("   leader pid {} killed; term {} follows term {}", leader_pid, next->term, first->term);
  }
  for (auto& [pid, out] : candidates) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    std::filesystem::remove(out);
  }
  // The second observer reads the later changes from the log.
  while (terms[1].size() < terms[0].size()) {
    if (!co_await next_term(1)) break;
  }
  second.stop();
  report.record("a killed leader is replaced within its lease", replaced && after <= lease + 500ms,
                fmt::format("the next leader {} ms after the kill (lease {} ms)", after.count(), lease.count()));
  report.record("observers see the same terms in order", terms[0] == terms[1] && terms[0].size() >= 2,
                fmt::format("{} terms seen by both observers", terms[0].size()));
}

}  // namespace

asio::awaitable<void> coordination_sections(client& c, demo_report& report, std::string const& url,
                                            std::string const& prefix) {
  co_await latch_section(c, report, url, prefix);
  co_await multi_section(c, report, url, prefix);
  co_await election_section(c, report, url, prefix);
}

}  // namespace redisync::cli
