// M1: a multi-lock of 4 names against the same 4 names acquired one after the other (in name
// order, as anyone taking several locks without a multi-lock must, to avoid deadlock), released
// after. Alone (M1_N rounds, one task: latency, round trips) and contended (M1_C tasks each taking
// 4 random names of M1_KEYS until M1_OPS rounds are done: throughput), with Redis's commands and
// both sides' CPU per round.

#include "cli/lab/bench/bench.hpp"

#include <boost/asio/use_awaitable.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <set>

namespace redisync::cli::bench {

namespace {

// One round: every name held, then all released.
using round_fn = std::function<asio::awaitable<void>(owner const&, std::vector<std::string> const&)>;

asio::awaitable<void> multi_round(bench_context const& b, owner const& me, std::vector<std::string> const& names) {
  auto const locks = me.locks(names);
  multi_held h;
  if (b.watchdog) {
    h = co_await locks.acquire(asio::use_awaitable);
  } else {
    h = co_await locks.acquire(std::chrono::milliseconds{b.p.lease_ms}, asio::use_awaitable);
  }
  co_await h.release(asio::use_awaitable);
}

asio::awaitable<void> sequential_round(bench_context const& b, owner const& me, std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  std::vector<held> holds;
  for (auto const& n : names) {
    auto l = me.lock(n);
    holds.push_back(co_await b.acquire(l));
  }
  for (auto& h : holds) co_await h.release(asio::use_awaitable);
}

// `rounds` rounds by `tasks` tasks, each on `pick()`'s names: rounds per second, latency
// percentiles, Redis commands and CPU (both sides) per round.
asio::awaitable<json::object> measure(bench_context& b, round_fn const& round, std::int64_t tasks, std::int64_t rounds,
                                      std::function<std::vector<std::string>()> const& pick) {
  std::vector<double> lat;
  std::int64_t started = 0;
  bool stop = false;
  auto const before = co_await server_totals_now(b.admin);
  auto const cpu_before = process_cpu_s();
  auto const t0 = clock_type::now();
  auto task = [&](int) -> asio::awaitable<void> {
    auto const me = b.c.new_owner();
    while (!stop && started < rounds) {
      ++started;
      auto const names = pick();
      auto const s = clock_type::now();
      co_await round(me, names);
      lat.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - s).count());
    }
  };
  bool const capped = co_await run_tasks(tasks, b.p.cap_s, stop, task);
  double const elapsed = std::chrono::duration<double>(clock_type::now() - t0).count();
  auto const cpu = process_cpu_s() - cpu_before;
  auto const after = co_await server_totals_now(b.admin);
  auto const n = static_cast<std::int64_t>(lat.size());
  auto const d = delta(before.calls, after.calls, n);
  co_return json::object{{"rounds", n},
                         {"capped", capped},
                         {"rounds_per_s", std::llround(double(n) / elapsed)},
                         {"p50_us", r2(percentile(lat, 50))},
                         {"p99_us", r2(percentile(lat, 99))},
                         {"cmds_per_round", d.per_op},
                         {"scripts_per_round", d.scripts_per_op},
                         {"client_cpu_us_per_round", r2(cpu * 1e6 / double(std::max<std::int64_t>(n, 1)))},
                         {"redis_cpu_us_per_round", r2((after.cpu_s - before.cpu_s) * 1e6 / double(std::max<std::int64_t>(n, 1)))}};
}

double ratio(json::object const& multi, json::object const& sequential, char const* field) {
  auto const s = sequential.at(field).to_number<double>();
  return s > 0 ? r2(multi.at(field).to_number<double>() / s) : 0.0;
}

json::object compared(json::object const& multi, json::object const& sequential) {
  return {{"multi", multi},
          {"sequential", sequential},
          {"speedup", ratio(multi, sequential, "rounds_per_s")},
          {"p99_ratio", ratio(multi, sequential, "p99_us")},
          {"client_cpu_ratio", ratio(multi, sequential, "client_cpu_us_per_round")}};
}

template <class... Runs>
bool any_capped(Runs const&... runs) {
  return (runs.at("capped").as_bool() || ...);
}

}  // namespace

asio::awaitable<json::object> m1(bench_context& b) {
  auto const alone_n = env_number("M1_N", 5000, 1, many);
  auto const tasks = env_number("M1_C", 16, 1, 10000);
  auto const keys = env_number("M1_KEYS", 64, 4, many);
  auto const contended_n = env_number("M1_OPS", 5000, 1, many);
  co_await b.warmup("bench:m1:warmup");
  auto const same = [] { return std::vector<std::string>{"bench:m1:a", "bench:m1:b", "bench:m1:c", "bench:m1:d"}; };
  mulberry32 rng{42};
  auto const random4 = [&] {
    std::set<std::string> picked;
    while (picked.size() < 4) {
      picked.insert(fmt::format("bench:m1:k{}", static_cast<std::int64_t>(rng.next() * double(keys))));
    }
    return std::vector<std::string>{picked.rbegin(), picked.rend()};  // against the name order
  };
  round_fn const multi = [&](owner const& me, std::vector<std::string> const& n) { return multi_round(b, me, n); };
  round_fn const sequential = [&](owner const& me, std::vector<std::string> const& n) {
    return sequential_round(b, me, n);
  };
  // Each co_await in its own statement: GCC 12 cannot keep braced lists around one.
  auto const alone_multi = co_await measure(b, multi, 1, alone_n, same);
  auto const alone_sequential = co_await measure(b, sequential, 1, alone_n, same);
  auto const contended_multi = co_await measure(b, multi, tasks, contended_n, random4);
  auto const contended_sequential = co_await measure(b, sequential, tasks, contended_n, random4);
  co_return json::object{{"names", 4},
                         {"alone", compared(alone_multi, alone_sequential)},
                         {"contended", compared(contended_multi, contended_sequential)},
                         {"tasks", tasks},
                         {"keys", keys},
                         {"capped", any_capped(alone_multi, alone_sequential, contended_multi, contended_sequential)}};
}

}  // namespace redisync::cli::bench
