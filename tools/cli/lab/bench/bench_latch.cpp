// L1, a latch's wake-up across processes: L1_P children of this program (`bench L1C`) share
// L1_N waiters on one latch per round, L1_R rounds. In each round every child starts its waiters,
// says it is ready once they all wait, and the parent counts the latch down to zero; each waiter's
// wake-up is measured on the machine's monotonic clock from just before the count-down was sent.

#include "cli/lab/bench/bench.hpp"

#include "cli/lab/bench/bench_children.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <fmt/core.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <unistd.h>

namespace redisync::cli::bench {

namespace {

struct l1_knobs {
  std::int64_t processes = env_number("L1_P", 4, 1, 64);
  std::int64_t waiters = env_number("L1_N", 100, 1, 100'000);
  std::int64_t rounds = env_number("L1_R", 20, 1, 10'000);
  std::int64_t run_id = env_number("L1_RUN", 0, 0, many * 100);
};

std::string round_key(std::string_view what, std::int64_t run_id, std::int64_t round) {
  return fmt::format("bench:l1:{}:{}:{}", what, run_id, round);
}

}  // namespace

asio::awaitable<json::object> l1(bench_context& b) {
  l1_knobs k;
  k.run_id = static_cast<std::int64_t>(::getpid());
  ::setenv("L1_P", std::to_string(k.processes).c_str(), 1);
  ::setenv("L1_N", std::to_string(k.waiters).c_str(), 1);
  ::setenv("L1_R", std::to_string(k.rounds).c_str(), 1);
  ::setenv("L1_RUN", std::to_string(k.run_id).c_str(), 1);
  for (std::int64_t r = 0; r < k.rounds; ++r) {
    co_await b.c.latch(round_key("latch", k.run_id, r)).try_set_count(1, asio::use_awaitable);
  }
  std::vector<std::string> args{"bench", "--redis", b.url, "--workload", "L1C"};
  bench_children children{std::filesystem::temp_directory_path() / fmt::format("redisync-l1-{}", k.run_id), args,
                          k.processes, "L1_PROC"};
  std::vector<std::int64_t> opened_at;  // per round: just before the count-down was sent
  bool capped = false;
  for (std::int64_t r = 0; r < k.rounds && !capped; ++r) {
    auto const ready = [&]() -> asio::awaitable<bool> {
      co_return co_await list_length(b.admin, round_key("ready", k.run_id, r)) == k.processes || children.reap() > 0;
    };
    co_await poll_until(ready, std::chrono::seconds{30}, std::chrono::milliseconds{1});
    if (children.reap() > 0 || co_await list_length(b.admin, round_key("ready", k.run_id, r)) != k.processes) {
      capped = true;
      break;
    }
    opened_at.push_back(monotonic_ns());
    co_await b.c.latch(round_key("latch", k.run_id, r)).count_down(asio::use_awaitable);
  }
  auto const all_exited = [&]() -> asio::awaitable<bool> { co_return children.reap() == k.processes; };
  if (!capped) capped = !co_await poll_until(all_exited, std::chrono::seconds{b.p.cap_s}, std::chrono::milliseconds{1});
  children.kill_unfinished();
  children.forward_stderr();
  std::vector<double> wakes;
  std::int64_t missed = 0;
  for (std::size_t i = 0; i < children.size(); ++i) {
    auto const share = children.result_of(i);
    if (!share) {
      capped = true;
      continue;
    }
    missed += share->at("missed").as_int64();
    for (auto const& w : share->at("opened").as_array()) {
      auto const& pair = w.as_array();
      auto const round = static_cast<std::size_t>(pair[0].as_int64());
      if (round < opened_at.size()) wakes.push_back(double(pair[1].as_int64() - opened_at[round]) / 1e6);
    }
  }
  resp::request tidy;
  for (std::int64_t r = 0; r < k.rounds; ++r) {
    tidy.push("DEL", round_key("ready", k.run_id, r), round_key("latch", k.run_id, r));
  }
  co_await b.admin.exec(std::move(tidy), asio::use_awaitable);
  co_return json::object{{"capped", capped},
                         {"processes", k.processes},
                         {"waiters", k.waiters},
                         {"rounds", k.rounds},
                         {"wakes", static_cast<std::int64_t>(wakes.size())},
                         {"missed", missed},
                         {"wake_p50_ms", r2(percentile(wakes, 50))},
                         {"wake_p99_ms", r2(percentile(wakes, 99))},
                         {"wake_max_ms", r2(percentile(wakes, 100))},
                         {"safety_ok", missed == 0 && !capped}};
}

// One child of l1: its share of the waiters in every round, ready once all of them wait; reports
// when each one woke.
asio::awaitable<json::object> l1c(bench_context& b) {
  l1_knobs const k;
  auto const index = env_number("L1_PROC", 0, 0, k.processes - 1);
  auto const mine = k.waiters / k.processes + (index < k.waiters % k.processes ? 1 : 0);
  json::array opened;
  std::int64_t missed = 0;
  for (std::int64_t r = 0; r < k.rounds; ++r) {
    auto const latch = b.c.latch(round_key("latch", k.run_id, r));
    auto const done = std::make_shared<std::int64_t>(0);
    for (std::int64_t w = 0; w < mine; ++w) {
      auto const on_done = [&, done, r](std::exception_ptr e, bool open) {
        ++*done;
        if (e || !open) {
          ++missed;
          return;
        }
        opened.emplace_back(json::array{r, monotonic_ns()});
      };
      asio::co_spawn(b.c.get_executor(), latch.wait(std::chrono::seconds{60}, asio::use_awaitable), on_done);
    }
    auto const waiting = [&]() -> asio::awaitable<bool> {
      co_return static_cast<std::int64_t>(b.c.metrics().waiters) >= mine;
    };
    co_await poll_until(waiting, std::chrono::seconds{30}, std::chrono::milliseconds{1});
    co_await b.c.flush_subscriptions(asio::use_awaitable);
    resp::request ready;
    ready.push("RPUSH", round_key("ready", k.run_id, r), index);
    co_await command(b.admin, std::move(ready));
    auto const all_done = [&]() -> asio::awaitable<bool> { co_return *done == mine; };
    if (!co_await poll_until(all_done, std::chrono::seconds{70}, std::chrono::milliseconds{1})) std::quick_exit(1);
  }
  co_return json::object{{"capped", false}, {"missed", missed}, {"opened", std::move(opened)}};
}

}  // namespace redisync::cli::bench
