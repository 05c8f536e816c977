// E1, leader election's hand-over: (1) on resign, E1_R rounds between two clients of this process
// (so the next leader hears of it from Redis, as one in another process would): the time from the
// resign call to the waiting candidate leading; (2) on a leader killed with SIGKILL, E1_K rounds: a
// child process (`redisync stress --kind election`, watchdog lease E1_LEASE_MS) leads, this process
// campaigns, the child is killed, and the time from the kill to this process leading is measured.

#include "cli/lab/bench/bench.hpp"

#include "cli/lab/bench/bench_children.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <fmt/core.h>

#include <unistd.h>

namespace redisync::cli::bench {

namespace {

double ms_since(clock_type::time_point t) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t).count();
}

json::object summary_of(std::vector<double> const& ms) {
  return {{"rounds", ms.size()},
          {"p50_ms", r2(percentile(ms, 50))},
          {"p99_ms", r2(percentile(ms, 99))},
          {"max_ms", r2(percentile(ms, 100))}};
}

// A campaign on its way: done once it leads (or failed).
struct pending_campaign {
  explicit pending_campaign(asio::any_io_executor ex) : done{std::move(ex), asio::steady_timer::time_point::max()} {}
  held leadership;
  std::exception_ptr failure;
  asio::steady_timer done;
};

std::shared_ptr<pending_campaign> campaign_now(election const& e, std::string value) {
  auto p = std::make_shared<pending_campaign>(e.get_executor());
  asio::co_spawn(e.get_executor(), e.campaign(std::move(value), asio::use_awaitable),
                 [p](std::exception_ptr failure, held h) {
                   p->failure = failure;
                   p->leadership = std::move(h);
                   p->done.cancel();
                 });
  return p;
}

asio::awaitable<held> led(std::shared_ptr<pending_campaign> p) {
  co_await p->done.async_wait(asio::as_tuple(asio::use_awaitable));
  if (p->failure) std::rethrow_exception(p->failure);
  co_return std::move(p->leadership);
}

// The time from a resign to the other client's candidate leading, `rounds` times.
asio::awaitable<std::vector<double>> on_resign(bench_context& b, client& other, std::int64_t rounds) {
  auto const name = fmt::format("bench:e1:resign:{}", ::getpid());
  std::vector<election> const sides{b.c.election(name), other.election(name)};
  auto leadership = co_await sides[0].campaign("0", asio::use_awaitable);
  std::vector<double> ms;
  for (std::int64_t r = 0; r < rounds; ++r) {
    auto const& next = sides[(r + 1) % 2];
    auto const& current = sides[r % 2];
    auto const waiting = campaign_now(next, std::to_string(r + 1));
    auto const candidate_waits = [&] { return b.c.metrics().waiters + other.metrics().waiters == 1; };
    co_await wait_until(candidate_waits, std::chrono::seconds{10});
    auto const resigned = clock_type::now();
    co_await current.resign(leadership, asio::use_awaitable);
    leadership = co_await led(waiting);
    ms.push_back(ms_since(resigned));
  }
  co_await sides[rounds % 2].resign(leadership, asio::use_awaitable);
  co_return ms;
}

// The time from a leader's SIGKILL to this process leading, `rounds` times.
asio::awaitable<std::vector<double>> on_kill(bench_context& b, std::int64_t rounds, std::int64_t lease_ms) {
  auto const name = fmt::format("bench:e1:kill:{}", ::getpid());
  auto const e = b.c.election(name);
  std::vector<double> ms;
  for (std::int64_t r = 0; r < rounds; ++r) {
    std::vector<std::string> const args{"stress", "--redis", b.url, "--kind", "election", "--lock", name,
                                        "--iterations", "1", "--hold-ms", "600000", "--watchdog-ms",
                                        std::to_string(lease_ms)};
    bench_children leader{std::filesystem::temp_directory_path() / fmt::format("redisync-e1-{}-{}", ::getpid(), r),
                          args, 1, "E1_PROC"};
    auto const leads = [&]() -> asio::awaitable<bool> {
      co_return (co_await e.leader(asio::use_awaitable)).has_value() || leader.reap() > 0;
    };
    co_await poll_until(leads, std::chrono::seconds{30}, std::chrono::milliseconds{5});
    if (leader.reap() > 0) throw std::runtime_error{"E1: the leader process ended before it was killed"};
    auto const waiting = campaign_now(e, "parent");
    co_await wait_until([&] { return b.c.metrics().waiters == 1; }, std::chrono::seconds{10});
    auto const killed = clock_type::now();
    leader.kill_unfinished();
    auto leadership = co_await led(waiting);
    ms.push_back(ms_since(killed));
    co_await e.resign(leadership, asio::use_awaitable);
  }
  co_return ms;
}

}  // namespace

asio::awaitable<json::object> e1(bench_context& b) {
  auto const rounds = env_number("E1_R", 200, 1, 100'000);
  auto const kills = env_number("E1_K", 5, 0, 1000);
  auto const lease_ms = env_number("E1_LEASE_MS", 1000, 30, one_day_ms);
  client other{b.c.get_executor(), config_from_url(b.url)};
  other.start();
  co_await connect(other);
  auto const resign_ms = co_await on_resign(b, other, rounds);
  other.stop();
  auto const kill_ms = co_await on_kill(b, kills, lease_ms);
  json::object out{{"on_resign", summary_of(resign_ms)}, {"lease_ms", lease_ms}, {"capped", false}};
  if (!kill_ms.empty()) {
    out["on_kill"] = summary_of(kill_ms);
    out["on_kill_each_ms"] = json::value_from(kill_ms);
  }
  co_return out;
}

}  // namespace redisync::cli::bench
