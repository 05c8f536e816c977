// W6 of WORKLOADS.md: 16 tasks, 8000 critical sections, 90% of them reads (mulberry32, seed 1). A
// read holds 1 ms, then reads the counter; a write reads it, holds 1 ms and writes it + 1. Run under
// the read-write lock, then under the reentrant lock (every section exclusive) as the baseline, on
// the same server. Then each side alone, to count the lock's round trips of one read and one write.
// Then both again with the tasks in W6_P processes (2 x 8 by default): children of this process
// (`bench W6C`) that start together and report every hold's interval on the machine's monotonic
// clock, from which this process finds overlaps and the readers at once across processes.

#include "cli/bench.hpp"

#include "process/child.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace redisync::cli::bench {

namespace {

std::string const counter_key = "bench:w6:counter";

// A hold's interval, as its task saw it: from the grant's arrival to the release's call, both
// inside the server's hold, in ns of the monotonic clock, which all processes of a machine share.
struct interval {
  bool write;
  std::int64_t from_ns, to_ns;
};

std::int64_t monotonic_ns(clock_type::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

struct w6_run {
  std::int64_t done = 0, reads = 0, writes = 0, max_readers = 0, counter = 0;
  std::int64_t read_saw_change = 0;  // a read that saw the counter other than the writes completed
  std::int64_t write_runs = 0;       // writes that came after a read: writes in a row are cheaper
  std::vector<double> read_waits, write_waits;
  std::vector<interval> holds;  // only for a share of a run across processes
  double elapsed = 0;
  bool capped = false;
  command_delta cmds;
};

// How a run is carried out: the whole in this process, or one process's share of it.
struct w6_share {
  bool whole = true;  // resets the counter, counts commands, checks each read against the writes
};

asio::awaitable<void> pause_us(std::int64_t us) {
  if (us <= 0) co_return;
  asio::steady_timer t{co_await asio::this_coro::executor, std::chrono::microseconds{us}};
  co_await t.async_wait(asio::use_awaitable);
}

asio::awaitable<std::int64_t> read_counter(client& c, std::string const& counter) {
  resp::request get;
  get.push("GET", counter);
  auto v = co_await command(c, std::move(get));
  std::int64_t n = 0;
  if (!v.is_null()) v.as_integer(n);
  co_return n;
}

std::vector<bool> section_kinds(std::int64_t m) {
  mulberry32 rng{1};
  std::vector<bool> writes(static_cast<std::size_t>(m));
  for (auto&& w : writes) w = rng.next() >= 0.9;
  return writes;
}

// `read_write`: under the read-write lock; otherwise every section under the reentrant lock.
// `writes`: which sections are writes.
asio::awaitable<w6_run> run(bench_context& b, bool read_write, std::vector<bool> const& writes,
                            std::string const& name, std::int64_t tasks, w6_share share = {}) {
  if (share.whole) {
    resp::request reset;
    reset.push("SET", counter_key, "0");
    co_await b.admin.exec(std::move(reset), asio::use_awaitable);
  }
  w6_run r;
  std::int64_t claimed = 0, readers = 0, writes_completed = 0;
  bool last_was_write = false;
  bool stop = false;
  stats_map before;
  if (share.whole) before = co_await command_stats(b.admin);
  auto const t0 = clock_type::now();
  auto const total = static_cast<std::int64_t>(writes.size());
  auto task = [&](int) -> asio::awaitable<void> {
    auto me = b.c.new_owner();
    auto rw = me.read_write_lock(name);
    auto plain = me.lock(name);
    auto read_side = rw.read();
    auto write_side = rw.write();
    while (!stop && claimed < total) {
      bool const write = writes[static_cast<std::size_t>(claimed++)];
      auto& l = !read_write ? plain : write ? write_side : read_side;
      auto const s = clock_type::now();
      auto h = co_await b.acquire(l);
      auto const granted = clock_type::now();
      auto const waited = std::chrono::duration<double, std::milli>(granted - s).count();
      if (write && !last_was_write) ++r.write_runs;
      last_was_write = write;
      if (write) {
        r.write_waits.push_back(waited);
        auto const n = co_await read_counter(b.c, counter_key);
        co_await pause_us(b.p.w6_hold_us);
        resp::request set;
        set.push("SET", counter_key, n + 1);
        co_await command(b.c, std::move(set));
        ++writes_completed;
        ++r.writes;
      } else {
        r.read_waits.push_back(waited);
        r.max_readers = std::max(r.max_readers, ++readers);
        co_await pause_us(b.p.w6_hold_us);
        // No write can have run since this read began, nor be running: the counter is the count
        // of writes completed (in this process: a share of a run is checked from its intervals).
        auto const seen = co_await read_counter(b.c, counter_key);
        if (share.whole && seen != writes_completed) ++r.read_saw_change;
        --readers;
        ++r.reads;
      }
      ++r.done;
      if (!share.whole) r.holds.push_back({write, monotonic_ns(granted), monotonic_ns(clock_type::now())});
      co_await h.release(asio::use_awaitable);
    }
  };
  r.capped = co_await run_tasks(tasks, b.p.cap_s, stop, task);
  r.elapsed = std::chrono::duration<double>(clock_type::now() - t0).count();
  if (share.whole) {
    r.cmds = delta(before, co_await command_stats(b.admin), r.done);
    r.counter = co_await read_counter(b.admin, counter_key);
  }
  co_return r;
}

json::object report(w6_run const& r) {
  return json::object{{"m", r.done},
                      {"capped", r.capped},
                      {"elapsed_s", r2(r.elapsed)},
                      {"cs_per_s", std::llround(double(r.done) / r.elapsed)},
                      {"read_cs_per_s", std::llround(double(r.reads) / r.elapsed)},
                      {"reads", r.reads},
                      {"writes", r.writes},
                      {"read_wait_p99_ms", r2(percentile(r.read_waits, 99))},
                      {"write_wait_p50_ms", r2(percentile(r.write_waits, 50))},
                      {"write_wait_p99_ms", r2(percentile(r.write_waits, 99))},
                      {"write_wait_max_ms", r2(percentile(r.write_waits, 100))},
                      {"max_concurrent_readers", r.max_readers},
                      {"writes_in_a_row", r2(double(r.writes) / double(std::max<std::int64_t>(r.write_runs, 1)))},
                      {"counter", r.counter},
                      {"safety_ok", r.counter == r.writes && r.read_saw_change == 0},
                      {"cmds_per_cs", r.cmds.per_op},
                      {"scripts_per_cs", r.cmds.scripts_per_op},
                      {"cmd_breakdown", r.cmds.breakdown}};
}

// ---- across processes

std::int64_t processes_of_w6() { return env_number("W6_P", 2, 1, 64); }

std::string run_key(std::string_view what, std::int64_t run_id) { return fmt::format("bench:w6:{}:{}", what, run_id); }

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

// Polls `done` every millisecond for up to `limit`.
template <class Condition>
asio::awaitable<bool> poll(Condition done, std::chrono::milliseconds limit) {
  auto const deadline = clock_type::now() + limit;
  asio::steady_timer t{co_await asio::this_coro::executor};
  while (!(co_await done())) {
    if (clock_type::now() > deadline) co_return false;
    t.expires_after(std::chrono::milliseconds{1});
    co_await t.async_wait(asio::use_awaitable);
  }
  co_return true;
}

asio::awaitable<std::int64_t> list_length(client& admin, std::string const& key) {
  resp::request req;
  req.push("LLEN", key);
  co_return (co_await command(admin, std::move(req))).integer();
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

// Runs W6 in W6_P children of this process (W6_C tasks in all), all starting at once.
asio::awaitable<json::object> across_processes(bench_context& b, bool read_write) {
  auto const processes = processes_of_w6();
  auto const run_id = static_cast<std::int64_t>(::getpid()) * 10 + (read_write ? 1 : 0);
  resp::request reset;
  reset.push("SET", counter_key, "0");
  reset.push("DEL", run_key("ready", run_id), run_key("go", run_id));
  co_await b.admin.exec(std::move(reset), asio::use_awaitable);
  auto const dir = std::filesystem::temp_directory_path() / fmt::format("redisync-w6-{}", run_id);
  std::filesystem::create_directories(dir);
  // The children inherit this environment: the knobs, and which share is theirs.
  ::setenv("W6_P", std::to_string(processes).c_str(), 1);
  ::setenv("W6_RW", read_write ? "1" : "0", 1);
  ::setenv("W6_RUN", std::to_string(run_id).c_str(), 1);
  ::setenv("W6_C", std::to_string(std::max<std::int64_t>(1, b.p.w6_c / processes)).c_str(), 1);
  std::vector<pid_t> children;
  for (std::int64_t i = 0; i < processes; ++i) {
    ::setenv("W6_PROC", std::to_string(i).c_str(), 1);
    children.push_back(process::spawn_child("/proc/self/exe", {"bench", "--redis", b.url, "--workload", "W6C"},
                                            {.stdout_file = dir / fmt::format("{}.json", i)}));
  }
  auto const all_ready = [&]() -> asio::awaitable<bool> {
    co_return co_await list_length(b.admin, run_key("ready", run_id)) == processes;
  };
  bool const ready = co_await poll(all_ready, std::chrono::seconds{30});
  auto const before = co_await command_stats(b.admin);  // after the children's warm-up
  if (ready) {
    resp::request go;
    go.push("SET", run_key("go", run_id), "1");
    co_await b.admin.exec(std::move(go), asio::use_awaitable);
  }
  std::int64_t exited = 0;
  auto const all_exited = [&]() -> asio::awaitable<bool> {
    for (auto& pid : children) {
      if (pid > 0 && ::waitpid(pid, nullptr, WNOHANG) == pid) {
        pid = -1;
        ++exited;
      }
    }
    co_return exited == processes;
  };
  bool finished = false;
  if (ready) finished = co_await poll(all_exited, std::chrono::seconds{b.p.cap_s + 30});
  for (auto pid : children) {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  w6_run r;
  r.capped = !finished;
  std::int64_t first_ns = std::numeric_limits<std::int64_t>::max(), last_ns = 0;
  for (std::int64_t i = 0; i < processes; ++i) {
    std::ifstream in{dir / fmt::format("{}.json", i)};
    std::string line;
    if (!std::getline(in, line) || line.empty()) {
      r.capped = true;
      continue;
    }
    auto const share = json::parse(line).as_object();
    if (share.at("capped").as_bool()) r.capped = true;
    if (!share.contains("holds")) continue;  // it never started
    r.done += share.at("done").as_int64();
    r.reads += share.at("reads").as_int64();
    r.writes += share.at("writes").as_int64();
    r.write_runs += share.at("write_runs").as_int64();
    for (auto x : doubles(share.at("read_waits"))) r.read_waits.push_back(x);
    for (auto x : doubles(share.at("write_waits"))) r.write_waits.push_back(x);
    first_ns = std::min(first_ns, share.at("start_ns").as_int64());
    last_ns = std::max(last_ns, share.at("end_ns").as_int64());
    for (auto const& h : share.at("holds").as_array()) {
      auto const& a = h.as_array();
      r.holds.push_back({a[0].as_int64() == 1, a[1].as_int64(), a[2].as_int64()});
    }
  }
  std::filesystem::remove_all(dir);
  r.elapsed = last_ns > first_ns ? double(last_ns - first_ns) / 1e9 : 1e-9;
  r.cmds = delta(before, co_await command_stats(b.admin), r.done);
  r.counter = co_await read_counter(b.admin, counter_key);
  auto const found = sweep(r.holds, !read_write);
  // Under the baseline's lock, reads at once must be 1 as well.
  r.max_readers = (read_write ? found : sweep(r.holds, false)).max_readers;
  auto out = report(r);
  out["processes"] = processes;
  out["overlaps"] = found.overlaps;
  out["safety_ok"] = out["safety_ok"].as_bool() && found.overlaps == 0 && !r.capped;
  co_return out;
}

}  // namespace

asio::awaitable<json::object> w6(bench_context& b) {
  co_await b.warmup("bench:w6:warmup");
  auto const writes = section_kinds(b.p.w6_m);
  auto const rw = co_await run(b, true, writes, "bench:w6:rw", b.p.w6_c);
  auto const baseline = co_await run(b, false, writes, "bench:w6:lock", b.p.w6_c);
  // Each side alone: the lock's script calls of one read and of one write (the data commands
  // are one GET for a read, a GET and a SET for a write).
  std::vector<bool> const only_reads(1000, false), only_writes(1000, true);
  auto const reads_alone = co_await run(b, true, only_reads, "bench:w6:reads", b.p.w6_c);
  auto const writes_alone = co_await run(b, true, only_writes, "bench:w6:writes", b.p.w6_c);
  auto out = report(rw);
  out["read_cs_ratio_to_baseline"] = r2(double(rw.reads) / rw.elapsed / (double(baseline.reads) / baseline.elapsed));
  out["lock_script_calls_per_read"] = reads_alone.cmds.scripts_per_op;
  out["lock_script_calls_per_write"] = writes_alone.cmds.scripts_per_op;
  out["cmds_per_read"] = reads_alone.cmds.per_op;
  out["cmds_per_write"] = writes_alone.cmds.per_op;
  out["baseline"] = report(baseline);
  bool safe = out["safety_ok"].as_bool() && report(baseline)["safety_ok"].as_bool() &&
              report(reads_alone)["safety_ok"].as_bool() && report(writes_alone)["safety_ok"].as_bool();
  bool capped = rw.capped || baseline.capped || reads_alone.capped || writes_alone.capped;
  if (processes_of_w6() > 1) {
    auto split = co_await across_processes(b, true);
    auto split_baseline = co_await across_processes(b, false);
    split["read_cs_ratio_to_baseline"] =
        r2(split.at("read_cs_per_s").to_number<double>() / split_baseline.at("read_cs_per_s").to_number<double>());
    safe = safe && split["safety_ok"].as_bool() && split_baseline["safety_ok"].as_bool();
    capped = capped || split["capped"].as_bool() || split_baseline["capped"].as_bool();
    split["baseline"] = std::move(split_baseline);
    out["across_processes"] = std::move(split);
  }
  out["capped"] = capped;
  out["safety_ok"] = safe;
  co_return out;
}

// One child of across_processes: its share of the sections (every W6_P-th, from its index), with
// W6_C tasks, started when the parent says go; every hold's interval goes to the parent.
asio::awaitable<json::object> w6c(bench_context& b) {
  auto const processes = env_number("W6_P", 2, 1, 64);
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
  bool const started = co_await poll(go, std::chrono::seconds{60});
  if (!started) co_return json::object{{"capped", true}};
  auto const start_ns = monotonic_ns(clock_type::now());
  auto const r = co_await run(b, read_write, mine, read_write ? "bench:w6:rw:split" : "bench:w6:lock:split",
                              b.p.w6_c, w6_share{.whole = false});
  json::array holds;
  holds.reserve(r.holds.size());
  for (auto const& h : r.holds) holds.emplace_back(json::array{h.write ? 1 : 0, h.from_ns, h.to_ns});
  co_return json::object{{"capped", r.capped},
                         {"done", r.done},
                         {"reads", r.reads},
                         {"writes", r.writes},
                         {"write_runs", r.write_runs},
                         {"read_waits", numbers(r.read_waits)},
                         {"write_waits", numbers(r.write_waits)},
                         {"start_ns", start_ns},
                         {"end_ns", monotonic_ns(clock_type::now())},
                         {"holds", std::move(holds)}};
}

}  // namespace redisync::cli::bench
