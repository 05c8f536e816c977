// redisync bench: the workloads of WORKLOADS.md, one JSON line per run, so that this library is
// compared with the peers in the same run of shared/peers/run.sh:
//   redisync bench --redis URL --workload W1 [--watchdog]
//   redisync bench PORT W1 [--watchdog]            (how run.sh calls EXTRA_PEERS)
//   redisync bench PORT W5C [--kind fair]          (the child of shared/peers/w5.py)
// W6, read-mostly under the read-write lock with the reentrant lock as its baseline, in one process
// and across W6_P processes (bench_rw.cpp; `bench W6C` is such a process),
// L1, a latch's wake-up across processes (bench_latch.cpp; `bench L1C` is such a process), M1, a
// multi-lock of 4 names against 4 acquires in a row (bench_multi.cpp), E1, leader election's
// hand-over on resign and on a killed leader (bench_election.cpp),
// and the scale workloads S1 [--cold], S2, S3 (bench_scale.cpp), S4 (bench_fair.cpp), S5 (bench_rw_scale.cpp).

#include "cli/common/json_text.hpp"
#include "cli/lab/bench/bench.hpp"
#include "cli/common/metrics_port.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>

namespace redisync::cli {

using namespace bench;

namespace {

asio::awaitable<json::object> w1(bench_context& b) {
  std::string const key = "bench:w1:lock";
  co_await b.warmup(key);
  auto me = b.c.new_owner();
  auto l = me.lock(key);
  std::vector<double> lat;
  lat.reserve(static_cast<std::size_t>(b.p.w1_n));
  auto const before = co_await command_stats(b.admin);
  auto const cap_at = clock_type::now() + std::chrono::seconds{b.p.cap_s};
  bool capped = false;
  auto const t0 = clock_type::now();
  for (std::int64_t i = 0; i < b.p.w1_n; ++i) {
    auto const s = clock_type::now();
    auto h = co_await b.acquire(l);
    co_await h.release(asio::use_awaitable);
    lat.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - s).count());
    if ((i & 255) == 0 && clock_type::now() > cap_at) {
      capped = true;
      break;
    }
  }
  double const elapsed = std::chrono::duration<double>(clock_type::now() - t0).count();
  auto const after = co_await command_stats(b.admin);
  auto const n = static_cast<std::int64_t>(lat.size());
  auto const d = delta(before, after, n);
  co_return json::object{{"n", n},
                         {"target", b.p.w1_n},
                         {"capped", capped},
                         {"elapsed_s", r2(elapsed)},
                         {"ops_per_s", std::llround(double(n) / elapsed)},
                         {"p50_us", r2(percentile(lat, 50))},
                         {"p99_us", r2(percentile(lat, 99))},
                         {"cmds_per_op", d.per_op},
                         {"scripts_per_op", d.scripts_per_op},
                         {"cmd_breakdown", d.breakdown}};
}

asio::awaitable<json::object> w2(bench_context& b) {
  std::string const key = "bench:w2:lock";
  std::string const counter = "bench:w2:counter";
  co_await b.warmup("bench:w2:warmup");
  resp::request reset;
  reset.push("SET", counter, "0");
  co_await b.admin.exec(std::move(reset), asio::use_awaitable);
  std::int64_t claimed = 0, done = 0, handoffs = 0;
  int last_holder = -1;
  bool stop = false;
  std::vector<double> waits;
  std::vector<std::string> errors;
  auto const before = co_await command_stats(b.admin);
  auto const t0 = clock_type::now();
  auto task = [&](int w) -> asio::awaitable<void> {
    auto me = b.c.new_owner();
    auto l = me.lock(key);
    while (!stop && claimed < b.p.w2_m) {
      ++claimed;
      auto const s = clock_type::now();
      auto h = co_await b.acquire(l);
      waits.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - s).count());
      if (w != last_holder) {
        ++handoffs;
        last_holder = w;
      }
      resp::request get;
      get.push("GET", counter);
      auto const n = number_in(co_await command(b.c, std::move(get)));
      resp::request set;
      set.push("SET", counter, n + 1);
      co_await command(b.c, std::move(set));
      ++done;
      co_await h.release(asio::use_awaitable);
    }
  };
  bool const capped = co_await run_tasks(b.p.w2_c, b.p.cap_s, stop, task);
  double const elapsed = std::chrono::duration<double>(clock_type::now() - t0).count();
  auto const after = co_await command_stats(b.admin);
  resp::request get;
  get.push("GET", counter);
  auto final_value = co_await b.admin.exec(std::move(get), asio::use_awaitable);
  std::int64_t counter_value = 0;
  final_value.front().as_integer(counter_value);
  auto const d = delta(before, after, done);
  auto const stalls = std::count_if(waits.begin(), waits.end(), [](double x) { return x > 1000; });
  co_return json::object{{"m", done},
                         {"target", b.p.w2_m},
                         {"concurrency", b.p.w2_c},
                         {"capped", capped},
                         {"elapsed_s", r2(elapsed)},
                         {"cs_per_s", std::llround(double(done) / elapsed)},
                         {"wait_p50_ms", r2(percentile(waits, 50))},
                         {"wait_p99_ms", r2(percentile(waits, 99))},
                         {"wait_max_ms", r2(percentile(waits, 100))},
                         {"stalls_over_1s", stalls},
                         {"counter", counter_value},
                         {"safety_ok", counter_value == done},
                         {"handoff_ratio", r2(double(handoffs) / double(std::max<std::int64_t>(done, 1)))},
                         {"cmds_per_cs", d.per_op},
                         {"scripts_per_cs", d.scripts_per_op},
                         {"cmd_breakdown", d.breakdown}};
}

asio::awaitable<json::object> w3(bench_context& b) {
  co_await b.warmup("bench:w3:warmup");
  mulberry32 rnd{1};
  std::int64_t claimed = 0;
  bool stop = false;
  std::vector<double> lat;
  auto const before = co_await command_stats(b.admin);
  auto const t0 = clock_type::now();
  auto task = [&](int) -> asio::awaitable<void> {
    auto me = b.c.new_owner();
    while (!stop && claimed < b.p.w3_ops) {
      ++claimed;
      auto const i = static_cast<std::int64_t>(std::floor(rnd.next() * double(b.p.w3_keys)));
      auto l = me.lock("bench:w3:lock:" + std::to_string(i));  // a handle per operation
      auto const s = clock_type::now();
      auto h = co_await b.acquire(l);
      co_await h.release(asio::use_awaitable);
      lat.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - s).count());
    }
  };
  bool const capped = co_await run_tasks(b.p.w3_c, b.p.cap_s, stop, task);
  double const elapsed = std::chrono::duration<double>(clock_type::now() - t0).count();
  auto const after = co_await command_stats(b.admin);
  auto const n = static_cast<std::int64_t>(lat.size());
  auto const d = delta(before, after, n);
  auto const stalls = std::count_if(lat.begin(), lat.end(), [](double x) { return x > 1000; });
  co_return json::object{{"n", n},
                         {"target", b.p.w3_ops},
                         {"concurrency", b.p.w3_c},
                         {"keys", b.p.w3_keys},
                         {"capped", capped},
                         {"elapsed_s", r2(elapsed)},
                         {"ops_per_s", std::llround(double(n) / elapsed)},
                         {"p50_ms", r2(percentile(lat, 50))},
                         {"p99_ms", r2(percentile(lat, 99))},
                         {"max_ms", r2(percentile(lat, 100))},
                         {"stalls_over_1s", stalls},
                         {"cmds_per_op", d.per_op},
                         {"cmd_breakdown", d.breakdown}};
}

// W5's child (run by shared/peers/w5.py): this process's share of the critical sections on one lock
// that W5_P processes fight over. Waits are measured from the first attempt to the hold; a fair
// lock's waiters of this process must be served in the order they asked (their attempts leave on
// one connection in that order), and order_violations counts the pairs that were not.
asio::awaitable<json::object> w5c(bench_context& b, bool fair) {
  auto const proc = env_number("W5_PROC", 0, 0, 10000);
  auto const processes = env_number("W5_P", 4, 1, 10000);
  auto const tasks = env_number("W5_C", 4, 1, 10000);
  auto const m = env_number("W5_M", 4000, 1, many);
  std::string const key = "bench:w5:lock";
  std::string const counter = "bench:w5:counter";
  co_await b.warmup("bench:w5:warmup:" + std::to_string(proc));
  std::cout << "ready" << std::endl;
  for (std::string line; std::getline(std::cin, line) && line != "go";) {
  }
  auto const share = m / processes + (proc < m % processes ? 1 : 0);
  std::int64_t claimed = 0, done = 0;
  bool stop = false;
  struct wait_span {
    clock_type::time_point asked, held;
  };
  std::vector<wait_span> spans;
  json::array values;
  json::array errors;
  auto task = [&](int) -> asio::awaitable<void> {
    auto me = b.c.new_owner();
    redisync::lock l = fair ? me.fair_lock(key) : me.lock(key);
    while (!stop && claimed < share) {
      ++claimed;
      auto const asked = clock_type::now();
      auto h = co_await b.acquire(l);
      spans.push_back({asked, clock_type::now()});
      resp::request get;
      get.push("GET", counter);
      auto const n = number_in(co_await command(b.c, std::move(get)));
      values.push_back(n);
      resp::request set;
      set.push("SET", counter, n + 1);
      co_await command(b.c, std::move(set));
      ++done;
      co_await h.release(asio::use_awaitable);
    }
  };
  bool const capped = co_await run_tasks(tasks, b.p.cap_s, stop, task);
  json::array waits_ms;
  std::int64_t violations = 0;
  for (auto const& a : spans) {
    waits_ms.push_back(r2(std::chrono::duration<double, std::milli>(a.held - a.asked).count()));
    for (auto const& later : spans) {
      if (a.asked < later.asked && later.asked < a.held && later.held < a.held) ++violations;
    }
  }
  json::object out{{"waits_ms", std::move(waits_ms)}, {"values", std::move(values)}, {"done", done},
                   {"capped", capped},                {"errors", std::move(errors)}};
  if (fair) out["order_violations"] = violations;
  co_return out;
}

asio::awaitable<int> run_workload(asio::io_context& ctx, std::string url, std::string workload, bool watchdog,
                                  bool cold, std::string kind, std::optional<std::chrono::microseconds> reply_spin,
                                  metrics_options metrics) {
  bool const fair = kind == "fair";
  params p;
  std::string peer = "redisync";
  if (fair || watchdog) peer += fair && watchdog ? "(fair,watchdog)" : fair ? "(fair)" : "(watchdog)";
  json::object out{{"peer", peer},
                   {"lang", "c++"},
                   {"version", REDISYNC_VERSION},
                   {"workload", workload}};
  out["settings"] = json::object{
      {"lease_ms", p.lease_ms},
      {"watchdog", watchdog},
      {"renewal_ms", watchdog ? json::value(p.lease_ms / 3) : json::value(nullptr)},
      {"wait_policy", "pub/sub wake-up bounded by PTTL; FIFO per process with hand-off in the release script"},
      {"connections", 1},
      {"reply_spin_us", reply_spin ? reply_spin->count() : config{}.reply_spin.count()}};
  auto cfg = config_from_url(url);
  if (watchdog) cfg.watchdog_lease = std::chrono::milliseconds{p.lease_ms};
  if (reply_spin) cfg.reply_spin = *reply_spin;
  cfg.prefer_writers = env_number("PREFER_WRITERS", 1, 0, 1) == 1;  // W6: the read-write lock's policy
  client c{ctx.get_executor(), cfg};
  metrics_port const serving{c, metrics};
  c.start();
  client admin{ctx.get_executor(), config_from_url(url)};
  admin.start();
  co_await connect(c);
  co_await connect(admin);
  bench_context b{p, watchdog, c, admin, url, reply_spin};
  json::object result;
  if (workload == "W1") {
    result = co_await w1(b);
  } else if (workload == "W2") {
    result = co_await w2(b);
  } else if (workload == "W3") {
    result = co_await w3(b);
  } else if (workload == "W4") {
    result = co_await w4(b, kind == "semaphore");
  } else if (workload == "W5C") {
    result = co_await w5c(b, fair);
  } else if (workload == "W6") {
    result = co_await w6(b);
  } else if (workload == "W6C") {
    result = co_await w6c(b);
  } else if (workload == "L1") {
    result = co_await l1(b);
  } else if (workload == "E1") {
    result = co_await e1(b);
  } else if (workload == "M1") {
    result = co_await m1(b);
  } else if (workload == "L1C") {
    result = co_await l1c(b);
  } else if (workload == "S1") {
    result = co_await s1(b, cold, kind == "permits");
  } else if (workload == "S2") {
    result = co_await s2(b);
  } else if (workload == "S4") {
    result = co_await s4(b);
  } else if (workload == "S5") {
    result = co_await s5(b);
  } else {  // S3: bench_main accepts no other name
    result = co_await s3(b);
  }
  bool const capped = result["capped"].as_bool();
  auto const io = c.metrics();
  result["socket_writes"] = io.socket_writes;
  result["requests_written"] = io.round_trips;
  result["reply_spin_hits"] = io.reply_spin_hits;
  result["reply_spin_misses"] = io.reply_spin_misses;
  for (auto& [k, v] : result) out[k] = v;
  out["ok"] = !out.contains("safety_ok") || out["safety_ok"].as_bool();
  std::cout << json_text(out) << std::endl;
  if (capped) std::quick_exit(0);  // waiters abandoned at the cap are not waited for
  c.stop();
  admin.stop();
  co_return 0;
}

}  // namespace

int bench_main(std::vector<std::string> const& args) {
  std::string url, workload;
  std::string port;
  po::options_description options{"bench options"};
  options.add_options()
      ("redis", po::value(&url), "Redis URL")
      ("workload", po::value(&workload), "W1, W2, W3, W4, W5C, W6, W6C, L1, L1C, M1, E1, S1, S2, S3, S4 or S5")
      ("port", po::value(&port), "port of a Redis on 127.0.0.1 (first positional argument)")
      ("watchdog", "no fixed lease: LEASE_MS is the watchdog lease, renewed every third of it")
      ("cold", "S1 on a cold script cache (SCRIPT FLUSH first)")
      ("kind", po::value<std::string>()->default_value("lock"),
       "W5C: lock (reentrant) or fair; W4: permits (leased, the default) or semaphore (Redisson's); S1: lock "
       "(the default) or permits")
      ("reply-spin-us", po::value<long>(), "poll for a due reply this many µs before sleeping (default 200, 0 = off)");
  add_metrics_options(options);
  po::positional_options_description positional;
  positional.add("port", 1).add("workload", 1);
  po::variables_map vm;
  int code = 0;
  if (!parse("bench", "Runs one workload of WORKLOADS.md and prints one JSON line.", options,
             positional, args, vm, code)) {
    return code;
  }
  if (url.empty() && !port.empty()) url = "redis://127.0.0.1:" + port;
  if (url.empty() || workload.empty()) throw usage_error{"give --redis URL --workload W (or PORT WORKLOAD)"};
  static constexpr std::array<std::string_view, 16> workloads{"W1", "W2", "W3", "W4", "W5C", "W6", "W6C", "L1",
                                                               "L1C", "M1", "E1", "S1", "S2", "S3", "S4", "S5"};
  if (std::find(workloads.begin(), workloads.end(), workload) == workloads.end()) {
    throw usage_error{
        fmt::format("unknown workload '{}' (W1, W2, W3, W4, W5C, W6, W6C, L1, L1C, M1, E1, S1, S2, S3, S4, S5)", workload)};
  }
  auto const kind = vm["kind"].as<std::string>();
  if (kind != "lock" && kind != "fair" && kind != "semaphore" && kind != "permits") {
    throw usage_error{"--kind must be lock, fair, permits or semaphore, not '" + kind + "'"};
  }
  asio::io_context ctx{1};
  std::optional<std::chrono::microseconds> reply_spin;
  if (vm.count("reply-spin-us")) {
    reply_spin = std::chrono::microseconds{in_range("--reply-spin-us", vm["reply-spin-us"].as<long>(), 0, 10000)};
  }
  return run(ctx, run_workload(ctx, url, workload, vm.count("watchdog") > 0, vm.count("cold") > 0, kind, reply_spin,
                               metrics_options_from(vm)));
}

}  // namespace redisync::cli
