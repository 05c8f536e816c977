// W6 across processes: the parent starts W6_P children of this program (`bench W6C`), each with
// its share of the sections (every W6_P-th) and W6_C / W6_P tasks. They warm up, say they are
// ready, start together when the parent says go, and report every hold's interval on the
// machine's monotonic clock, from which the parent finds holds that overlap a write and the
// readers at once across processes.

#include "cli/lab/bench/bench_rw.hpp"

#include "cli/lab/bench/bench_children.hpp"

#include <boost/asio/use_awaitable.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>

#include <unistd.h>

namespace redisync::cli::bench {

namespace {

// The keys of one run's start: the children's `ready` list and the parent's `go`.
std::string run_key(std::string_view what, std::int64_t run_id) {
  return fmt::format("bench:w6:{}:{}", what, run_id);
}

// Holds that overlap an exclusive one (a write, or any hold of the baseline), and the most readers
// at once, by a sweep over the intervals' ends.
struct sweep_result {
  std::int64_t overlaps = 0, max_readers = 0;
};

sweep_result sweep(std::vector<interval> const& holds, bool all_exclusive) {
  struct edge {
    std::int64_t at;
    int delta;  // +1 begins (after every end at the same instant), -1 ends
    bool exclusive;
  };
  std::vector<edge> edges;
  edges.reserve(holds.size() * 2);
  for (auto const& h : holds) {
    bool const exclusive = all_exclusive || h.write;
    edges.push_back({h.from_ns, 1, exclusive});
    edges.push_back({h.to_ns, -1, exclusive});
  }
  std::sort(edges.begin(), edges.end(), [](edge const& a, edge const& b) {
    return a.at != b.at ? a.at < b.at : a.delta < b.delta;
  });
  sweep_result out;
  std::int64_t readers = 0, exclusive = 0;
  for (auto const& e : edges) {
    if (e.delta > 0 && (exclusive > 0 || (e.exclusive && readers > 0))) ++out.overlaps;
    (e.exclusive ? exclusive : readers) += e.delta;
    out.max_readers = std::max(out.max_readers, readers);
  }
  return out;
}

json::array numbers(std::vector<double> const& v) {
  json::array out;
  for (auto x : v) out.emplace_back(x);
  return out;
}

std::vector<double> doubles(json::value const& v) {
  std::vector<double> out;
  for (auto const& x : v.as_array()) out.push_back(x.to_number<double>());
  return out;
}

// A run across processes, summed from the processes' shares.
struct w6_shares {
  w6_run run;
  std::int64_t first_ns = std::numeric_limits<std::int64_t>::max(), last_ns = 0;
  std::int64_t spin_hits = 0;  // replies that the processes' connections polled for

  void add(json::object const& share) {
    if (share.at("capped").as_bool()) run.capped = true;
    if (!share.contains("holds")) return;  // it never started
    run.done += share.at("done").as_int64();
    run.reads += share.at("reads").as_int64();
    run.writes += share.at("writes").as_int64();
    run.write_runs += share.at("write_runs").as_int64();
    run.client_cpu_s += share.at("client_cpu_s").to_number<double>();
    spin_hits += share.at("reply_spin_hits").as_int64();
    for (auto x : doubles(share.at("read_waits"))) run.read_waits.push_back(x);
    for (auto x : doubles(share.at("write_waits"))) run.write_waits.push_back(x);
    first_ns = std::min(first_ns, share.at("start_ns").as_int64());
    last_ns = std::max(last_ns, share.at("end_ns").as_int64());
    for (auto const& h : share.at("holds").as_array()) {
      auto const& a = h.as_array();
      run.holds.push_back({a[0].as_int64() == 1, a[1].as_int64(), a[2].as_int64()});
    }
  }

  double elapsed() const { return last_ns > first_ns ? double(last_ns - first_ns) / 1e9 : 1e-9; }
};

}  // namespace

std::int64_t w6_processes() { return env_number("W6_P", 2, 1, 64); }

asio::awaitable<json::object> w6_across_processes(bench_context& b, bool read_write) {
  auto const processes = w6_processes();
  auto const run_id = static_cast<std::int64_t>(::getpid()) * 10 + (read_write ? 1 : 0);
  resp::request reset;
  reset.push("SET", counter_key, "0");
  reset.push("DEL", run_key("ready", run_id), run_key("go", run_id));
  co_await b.admin.exec(std::move(reset), asio::use_awaitable);
  // The children inherit this environment: the knobs, and which share is theirs.
  ::setenv("W6_P", std::to_string(processes).c_str(), 1);
  ::setenv("W6_RW", read_write ? "1" : "0", 1);
  ::setenv("W6_RUN", std::to_string(run_id).c_str(), 1);
  ::setenv("W6_C", std::to_string(std::max<std::int64_t>(1, b.p.w6_c / processes)).c_str(), 1);
  std::vector<std::string> args{"bench", "--redis", b.url, "--workload", "W6C"};
  if (b.watchdog) args.push_back("--watchdog");
  if (b.reply_spin) args.insert(args.end(), {"--reply-spin-us", std::to_string(b.reply_spin->count())});
  bench_children children{std::filesystem::temp_directory_path() / fmt::format("redisync-w6-{}", run_id), args,
                          processes, "W6_PROC"};
  // A child that ends before it is ready ends the wait: the run cannot start without it.
  std::int64_t ready_count = 0;
  auto const all_ready = [&]() -> asio::awaitable<bool> {
    ready_count = co_await list_length(b.admin, run_key("ready", run_id));
    co_return ready_count == processes || children.reap() > 0;
  };
  co_await poll_until(all_ready, std::chrono::seconds{30}, std::chrono::milliseconds{1});
  bool const ready = ready_count == processes && children.reap() == 0;
  auto const before = co_await server_totals_now(b.admin);  // after the children's warm-up
  if (ready) {
    resp::request go;
    go.push("SET", run_key("go", run_id), "1");
    co_await b.admin.exec(std::move(go), asio::use_awaitable);
  }
  auto const all_exited = [&]() -> asio::awaitable<bool> { co_return children.reap() == processes; };
  bool finished = false;
  if (ready) finished = co_await poll_until(all_exited, std::chrono::seconds{b.p.cap_s + 30},
                                                  std::chrono::milliseconds{1});
  bool const one_ended_early = !ready && children.reap() > 0;
  children.kill_unfinished();
  // Why a run is capped, in the report: each process that failed, how it ended, its last words.
  std::vector<std::string> problems;
  if (!ready && !one_ended_early) {
    problems.push_back(fmt::format("{} of {} processes were ready within 30 s", ready_count, processes));
  }
  if (ready && !finished) problems.push_back(fmt::format("the processes did not finish within {} s", b.p.cap_s + 30));
  for (auto& failure : children.failures()) problems.push_back(std::move(failure));
  children.forward_stderr();
  w6_shares shares;
  shares.run.capped = !finished;
  for (std::size_t i = 0; i < children.size(); ++i) {
    auto const share = children.result_of(i);
    if (share) {
      shares.add(*share);
      continue;
    }
    shares.run.capped = true;
    if (children.ended_well(i)) problems.push_back(fmt::format("process {} wrote no result", i));
  }
  resp::request tidy;
  tidy.push("DEL", run_key("ready", run_id), run_key("go", run_id));
  co_await b.admin.exec(std::move(tidy), asio::use_awaitable);
  auto& r = shares.run;
  r.elapsed = shares.elapsed();
  r.add_server_totals(before, co_await server_totals_now(b.admin));
  r.counter = co_await read_counter(b.admin, counter_key);
  auto const found = sweep(r.holds, !read_write);
  // Under the baseline's lock, reads at once must be 1 as well.
  r.max_readers = (read_write ? found : sweep(r.holds, false)).max_readers;
  auto out = report(r);
  out["processes"] = processes;
  out["overlaps"] = found.overlaps;
  out["reply_spin_hits"] = shares.spin_hits;
  out["safety_ok"] = out["safety_ok"].as_bool() && found.overlaps == 0 && !r.capped;
  if (!problems.empty()) {
    std::string all = problems.front();
    for (std::size_t i = 1; i < problems.size(); ++i) all += "; " + problems[i];
    std::cerr << fmt::format("redisync bench: W6 across processes ({}): {}\n",
                             read_write ? "read-write lock" : "baseline", all);
    out["problem"] = all;
  }
  co_return out;
}

// One child of w6_across_processes: its share of the sections (every W6_P-th, from its index), with
// W6_C tasks, started when the parent says go; every hold's interval goes to the parent.
asio::awaitable<json::object> w6c(bench_context& b) {
  auto const processes = w6_processes();
  auto const index = env_number("W6_PROC", 0, 0, processes - 1);
  bool const read_write = env_number("W6_RW", 1, 0, 1) == 1;
  auto const run_id = env_number("W6_RUN", 0, 0, many * 100);
  co_await b.warmup(fmt::format("bench:w6:warmup:{}", index));
  auto const all = section_kinds(b.p.w6_m);
  std::vector<bool> mine;
  for (std::size_t i = static_cast<std::size_t>(index); i < all.size(); i += static_cast<std::size_t>(processes)) {
    mine.push_back(all[i]);
  }
  resp::request ready;
  ready.push("RPUSH", run_key("ready", run_id), index);
  co_await command(b.admin, std::move(ready));
  auto const go = [&]() -> asio::awaitable<bool> {
    resp::request req;
    req.push("EXISTS", run_key("go", run_id));
    co_return (co_await command(b.admin, std::move(req))).integer() == 1;
  };
  bool const started = co_await poll_until(go, std::chrono::seconds{60}, std::chrono::milliseconds{1});
  if (!started) co_return json::object{{"capped", true}};
  auto const start_ns = monotonic_ns(clock_type::now());
  auto const name = read_write ? "bench:w6:rw:split" : "bench:w6:lock:split";
  auto const r = co_await run_w6(b, read_write, mine, name, b.p.w6_c, w6_share{.whole = false});
  json::array holds;
  holds.reserve(r.holds.size());
  for (auto const& h : r.holds) holds.emplace_back(json::array{h.write ? 1 : 0, h.from_ns, h.to_ns});
  co_return json::object{{"capped", r.capped},
                         {"done", r.done},
                         {"reads", r.reads},
                         {"writes", r.writes},
                         {"write_runs", r.write_runs},
                         {"client_cpu_s", r.client_cpu_s},
                         {"read_waits", numbers(r.read_waits)},
                         {"write_waits", numbers(r.write_waits)},
                         {"start_ns", start_ns},
                         {"end_ns", monotonic_ns(clock_type::now())},
                         {"holds", std::move(holds)}};
}

}  // namespace redisync::cli::bench
