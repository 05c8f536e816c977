// The demo's semaphore section: 3 leased permits shared by 6 processes; one is killed while it
// holds a permit, which comes back when its lease ends by the server's clock, and no process ever
// sees more than 3 holders.

#include "cli/lab/demo/demo_permits.hpp"

#include "cli/lab/demo/demo_children.hpp"
#include "primitives/permits/protocol.hpp"

#include <boost/asio/use_awaitable.hpp>

#include <csignal>
#include <filesystem>

#include <sys/wait.h>
#include <unistd.h>

namespace redisync::cli {

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

constexpr auto lease = 1000ms;
constexpr int permits = 3;

pid_t spawn_permits_stress(std::string const& url, std::string const& name, std::vector<std::string> more,
                           std::filesystem::path const& out) {
  std::vector<std::string> args{"--lock", name, "--kind", "permits", "--permits", std::to_string(permits),
                                "--lease-ms", std::to_string(lease.count())};
  args.insert(args.end(), more.begin(), more.end());
  return spawn_stress(url, std::move(args), out);
}

asio::awaitable<resp::value> ask(client& c, resp::request req) { co_return co_await command(c, std::move(req)); }

}  // namespace

asio::awaitable<void> leased_permits_section(client& c, demo_report& report, std::string const& url,
                                             std::string const& prefix) {
  auto const name = prefix + "permits";
  auto const leases = detail::permits_protocol::leases_key_of(name);
  report.say("7. {} permits of {} shared by 6 processes ({} ms leases); the first holder is killed (SIGKILL)",
             permits, name, lease.count());
  auto const dir = std::filesystem::temp_directory_path();
  auto const victim_out = dir / fmt::format("redisync-demo-{}-permits-victim.out", ::getpid());
  pid_t const victim = spawn_permits_stress(url, name, {"--iterations", "1", "--hold-ms", "60000"}, victim_out);
  std::string victim_permit;
  auto const holds = [&]() -> asio::awaitable<bool> {
    resp::request req;
    req.push("ZRANGE", leases, 0, 0);
    auto const first = co_await ask(c, std::move(req));
    if (first.elements().empty()) co_return false;
    victim_permit = std::string{first.elements()[0].text()};
    co_return true;
  };
  bool const held = co_await poll_until(holds, 10s, 5ms);
  std::vector<std::pair<pid_t, std::filesystem::path>> workers;
  for (int i = 0; i < 5; ++i) {
    auto out = dir / fmt::format("redisync-demo-{}-permits{}.out", ::getpid(), i);
    workers.emplace_back(spawn_permits_stress(url, name, {"--workers", "2", "--iterations", "15", "--hold-ms", "20"}, out),
                         std::move(out));
  }
  ::kill(victim, SIGKILL);
  ::waitpid(victim, nullptr, 0);
  auto const killed = std::chrono::steady_clock::now();
  report.say("   holder pid {} killed holding {}; 5 processes go on", victim, victim_permit);
  auto const back = [&]() -> asio::awaitable<bool> {
    resp::request req;
    req.push("ZSCORE", leases, victim_permit);
    co_return (co_await ask(c, std::move(req))).is_null();
  };
  bool const returned = held && co_await poll_until(back, lease + 10s, 5ms);
  auto const after = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - killed);
  std::int64_t most = 0, overlaps = 0, acquired = 0, errors = 0;
  bool all_done = true;
  for (auto const& [pid, out] : workers) {
    auto const summary = stress_summary(pid, out);
    if (!summary) {
      all_done = false;
      continue;
    }
    most = std::max(most, summary->at("max_holders").as_int64());
    overlaps += summary->at("overlaps").as_int64();
    acquired += summary->at("acquired").as_int64();
    errors += summary->at("errors").as_int64();
  }
  std::filesystem::remove(victim_out);
  resp::request get;
  get.push("GET", name + ":counter");
  auto const counter = co_await ask(c, std::move(get));
  report.record("a killed holder's permit comes back", returned && after <= lease + 500ms,
                fmt::format("back {} ms after the kill (lease {} ms)", after.count(), lease.count()));
  // The victim's one critical section may have counted before it was killed.
  auto const counted = number_in(counter);
  report.record("never more holders than permits",
                all_done && most <= permits && overlaps == 0 && errors == 0 && counted >= acquired &&
                    counted <= acquired + 1,
                fmt::format("at most {} of {} held at once over {} acquires", most, permits, acquired));
  resp::request cleanup;
  cleanup.push("DEL", name, name + ":counter", name + ":readers");
  co_await ask(c, std::move(cleanup));
}

}  // namespace redisync::cli
