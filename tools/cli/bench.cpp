// redisync bench: the workloads of WORKLOADS.md, one JSON line per run, so that this library is
// compared with the peers in the same run of shared/peers/run.sh:
//   redisync bench --redis URL --workload W1 [--watchdog]
//   redisync bench PORT W1 [--watchdog]            (how run.sh calls EXTRA_PEERS)

#include "cli/common.hpp"

#include <redisync/redisync.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>

namespace redisync::cli {

namespace asio = boost::asio;
namespace json = boost::json;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr std::int64_t many = 1'000'000'000;

// The knobs of WORKLOADS.md, from the environment as run.sh sets them.
struct params {
  std::int64_t lease_ms = env_number("LEASE_MS", 30000, 30, one_day_ms);
  std::int64_t warmup = env_number("WARMUP", 200, 0, many);
  std::int64_t cap_s = env_number("CAP_S", 60, 1, 24 * 3600);
  std::int64_t w1_n = env_number("W1_N", 20000, 1, many);
  std::int64_t w2_c = env_number("W2_C", 16, 1, 10000);
  std::int64_t w2_m = env_number("W2_M", 4000, 1, many);
  std::int64_t w3_c = env_number("W3_C", 64, 1, 10000);
  std::int64_t w3_keys = env_number("W3_KEYS", 1000, 1, many);
  std::int64_t w3_ops = env_number("W3_OPS", 20000, 1, many);
};

double r2(double x) { return std::round(x * 100) / 100; }

// Nearest rank: sort, p = s[max(0, ceil(p/100 * n) - 1)].
double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  auto const rank = static_cast<std::size_t>(std::max(0.0, std::ceil(p / 100 * double(v.size())) - 1));
  return v[std::min(rank, v.size() - 1)];
}

// mulberry32, seeded as in common.mjs: the same key sequence as every peer.
class mulberry32 {
 public:
  explicit mulberry32(std::uint32_t seed) : a_{seed} {}
  double next() {
    a_ += 0x6d2b79f5u;
    std::uint32_t t = a_;
    t = (t ^ (t >> 15)) * (t | 1u);
    t ^= t + (t ^ (t >> 7)) * (t | 61u);
    return double(t ^ (t >> 14)) / 4294967296.0;
  }

 private:
  std::uint32_t a_;
};

using stats_map = std::map<std::string, std::int64_t>;

asio::awaitable<stats_map> command_stats(client& admin) {
  resp::request req;
  req.push("INFO", "commandstats");
  auto replies = co_await admin.exec(std::move(req), asio::use_awaitable);
  stats_map out;
  std::string_view text = replies.front().text();
  while (!text.empty()) {
    auto const end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    if (!line.starts_with("cmdstat_")) continue;
    auto const colon = line.find(":calls=");
    if (colon == std::string_view::npos) continue;
    auto const calls = line.substr(colon + 7, line.find(',', colon) - colon - 7);
    std::int64_t n = 0;
    std::from_chars(calls.data(), calls.data() + calls.size(), n);
    out[std::string{line.substr(8, colon - 8)}] = n;
  }
  co_return out;
}

struct command_delta {
  double per_op = 0;
  double scripts_per_op = 0;
  json::object breakdown;
};

command_delta delta(stats_map const& before, stats_map const& after, std::int64_t per) {
  std::vector<std::pair<std::string, std::int64_t>> d;
  std::int64_t total = 0;
  for (auto const& [name, calls] : after) {
    if (name == "info") continue;
    auto const it = before.find(name);
    std::int64_t const x = calls - (it == before.end() ? 0 : it->second);
    if (x > 0) {
      d.emplace_back(name, x);
      total += x;
    }
  }
  std::stable_sort(d.begin(), d.end(), [](auto const& a, auto const& b) { return a.second > b.second; });
  command_delta out;
  per = std::max<std::int64_t>(per, 1);
  std::int64_t scripts = 0;
  for (auto const& [name, x] : d) {
    out.breakdown[name] = r2(double(x) / double(per));
    if (name == "eval" || name == "evalsha" || name == "fcall") scripts += x;
  }
  out.per_op = r2(double(total) / double(per));
  out.scripts_per_op = r2(double(scripts) / double(per));
  return out;
}

struct bench_context {
  params p;
  bool watchdog = false;
  client& c;
  client& admin;  // a second client: its commands are not the lock's

  lock make(owner const& me, std::string key) const { return me.lock(std::move(key)); }

  asio::awaitable<held> acquire(lock& l) const {
    if (watchdog) co_return co_await l.acquire(asio::use_awaitable);
    co_return co_await l.acquire(std::chrono::milliseconds{p.lease_ms}, asio::use_awaitable);
  }

  asio::awaitable<void> warmup(std::string const& key) const {
    auto me = c.new_owner();
    auto l = me.lock(key);
    for (std::int64_t i = 0; i < p.warmup; ++i) {
      auto h = co_await acquire(l);
      co_await h.release(asio::use_awaitable);
    }
  }
};

// Runs `count` tasks and waits until they end or the cap passes (then 2 s of grace).
asio::awaitable<bool> run_tasks(std::int64_t count, std::int64_t cap_s, bool& stop,
                                std::function<asio::awaitable<void>(int)> const& task) {
  auto ex = co_await asio::this_coro::executor;
  auto running = std::make_shared<std::int64_t>(count);
  auto all_done = std::make_shared<asio::steady_timer>(ex, asio::steady_timer::time_point::max());
  for (int i = 0; i < count; ++i) {
    asio::co_spawn(ex, task(i), [running, all_done](std::exception_ptr e) {
      if (e) {
        try {
          std::rethrow_exception(e);
        } catch (std::exception const& ex) {
          std::cerr << "bench task failed: " << ex.what() << "\n";
        }
      }
      if (--*running == 0) all_done->cancel();
    });
  }
  all_done->expires_after(std::chrono::seconds{cap_s});
  co_await all_done->async_wait(asio::as_tuple(asio::use_awaitable));
  if (*running == 0) co_return false;
  stop = true;
  all_done->expires_after(std::chrono::seconds{2});
  co_await all_done->async_wait(asio::as_tuple(asio::use_awaitable));
  co_return true;
}

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
      auto v = co_await command(b.c, std::move(get));
      std::int64_t n = 0;
      if (!v.is_null()) v.as_integer(n);
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

asio::awaitable<int> bench(asio::io_context& ctx, std::string url, std::string workload, bool watchdog,
                           std::optional<std::chrono::microseconds> reply_spin) {
  params p;
  json::object out{{"peer", watchdog ? "redisync(watchdog)" : "redisync"},
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
  if (workload == "W4") {
    out["ok"] = true;
    out["skipped"] = true;
    out["reason"] = "redisync has no semaphore yet";
    std::cout << json::serialize(out) << std::endl;
    co_return 0;
  }
  auto cfg = config_from_url(url);
  if (watchdog) cfg.watchdog_lease = std::chrono::milliseconds{p.lease_ms};
  if (reply_spin) cfg.reply_spin = *reply_spin;
  client c{ctx.get_executor(), cfg};
  c.start();
  client admin{ctx.get_executor(), config_from_url(url)};
  admin.start();
  bench_context b{p, watchdog, c, admin};
  json::object result;
  if (workload == "W1") {
    result = co_await w1(b);
  } else if (workload == "W2") {
    result = co_await w2(b);
  } else {  // W3: bench_main accepts no other name
    result = co_await w3(b);
  }
  bool const capped = result["capped"].as_bool();
  auto const io = c.stats();
  result["socket_writes"] = io.socket_writes;
  result["requests_written"] = io.requests_written;
  result["reply_spin_hits"] = io.reply_spin_hits;
  result["reply_spin_misses"] = io.reply_spin_misses;
  for (auto& [k, v] : result) out[k] = v;
  out["ok"] = !out.contains("safety_ok") || out["safety_ok"].as_bool();
  std::cout << json::serialize(out) << std::endl;
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
      ("workload", po::value(&workload), "W1, W2, W3 or W4")
      ("port", po::value(&port), "port of a Redis on 127.0.0.1 (first positional argument)")
      ("watchdog", "no fixed lease: LEASE_MS is the watchdog lease, renewed every third of it")
      ("reply-spin-us", po::value<long>(), "poll for a due reply this many µs before sleeping (default 200, 0 = off)");
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
  if (workload != "W1" && workload != "W2" && workload != "W3" && workload != "W4") {
    throw usage_error{fmt::format("unknown workload '{}' (W1, W2, W3, W4)", workload)};
  }
  asio::io_context ctx{1};
  std::optional<std::chrono::microseconds> reply_spin;
  if (vm.count("reply-spin-us")) {
    reply_spin = std::chrono::microseconds{in_range("--reply-spin-us", vm["reply-spin-us"].as<long>(), 0, 10000)};
  }
  return run(ctx, bench(ctx, url, workload, vm.count("watchdog") > 0, reply_spin));
}

}  // namespace redisync::cli
