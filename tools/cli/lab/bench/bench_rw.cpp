// W6 of WORKLOADS.md: 16 tasks, 8000 critical sections, 90% of them reads (mulberry32, seed 1). A
// read holds 1 ms, then reads the counter; a write reads it, holds 1 ms and writes it + 1. Run under
// the read-write lock, then under the reentrant lock (every section exclusive) as the baseline, on
// the same server. Then each side alone, to count the lock's round trips of one read and one write.
// Then both again with the tasks in W6_P processes (bench_rw_processes.cpp).

#include "cli/lab/bench/bench_rw.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <cmath>

namespace redisync::cli::bench {

namespace {

asio::awaitable<void> pause_us(std::int64_t us) {
  if (us <= 0) co_return;
  asio::steady_timer t{co_await asio::this_coro::executor, std::chrono::microseconds{us}};
  co_await t.async_wait(asio::use_awaitable);
}

}  // namespace

asio::awaitable<std::int64_t> read_counter(client& c, std::string const& counter) {
  resp::request get;
  get.push("GET", counter);
  co_return number_in(co_await command(c, std::move(get)));
}

std::vector<bool> section_kinds(std::int64_t m) {
  mulberry32 rng{1};
  std::vector<bool> writes(static_cast<std::size_t>(m));
  for (auto&& w : writes) w = rng.next() >= 0.9;
  return writes;
}

asio::awaitable<w6_run> run_w6(bench_context& b, bool read_write, std::vector<bool> const& writes,
                               std::string const& name, std::int64_t tasks, w6_share share) {
  if (share.whole) {
    resp::request reset;
    reset.push("SET", counter_key, "0");
    co_await b.admin.exec(std::move(reset), asio::use_awaitable);
  }
  w6_run r;
  std::int64_t claimed = 0, readers = 0, writes_completed = 0;
  bool last_was_write = false;
  bool stop = false;
  server_totals before;
  if (share.whole) before = co_await server_totals_now(b.admin);
  auto const client0 = process_cpu_s();
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
  r.client_cpu_s = process_cpu_s() - client0;
  if (share.whole) {
    r.add_server_totals(before, co_await server_totals_now(b.admin));
    r.counter = co_await read_counter(b.admin, counter_key);
  }
  co_return r;
}

json::object report(w6_run const& r) {
  auto const per_cs = double(std::max<std::int64_t>(r.done, 1));
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
                      {"client_cpu_us_per_cs", r2(1e6 * r.client_cpu_s / per_cs)},
                      {"server_cpu_us_per_cs", r2(1e6 * r.server_cpu_s / per_cs)},
                      {"script_us_per_cs", r2(1e6 * r.script_s / per_cs)},
                      {"scripts_per_cs", r.cmds.scripts_per_op},
                      {"cmd_breakdown", r.cmds.breakdown}};
}

namespace {

// One rate over another, or null when the other is 0 (a run that did nothing): JSON has no NaN.
json::value ratio(double rate, double to) { return to > 0 ? json::value(r2(rate / to)) : json::value(nullptr); }

}  // namespace

asio::awaitable<json::object> w6(bench_context& b) {
  co_await b.warmup("bench:w6:warmup");
  auto const writes = section_kinds(b.p.w6_m);
  auto const rw = co_await run_w6(b, true, writes, "bench:w6:rw", b.p.w6_c);
  auto const baseline = co_await run_w6(b, false, writes, "bench:w6:lock", b.p.w6_c);
  // Each side alone: the lock's script calls of one read and of one write (the data commands
  // are one GET for a read, a GET and a SET for a write).
  std::vector<bool> const only_reads(1000, false), only_writes(1000, true);
  auto const reads_alone = co_await run_w6(b, true, only_reads, "bench:w6:reads", b.p.w6_c);
  auto const writes_alone = co_await run_w6(b, true, only_writes, "bench:w6:writes", b.p.w6_c);
  auto out = report(rw);
  out["read_cs_ratio_to_baseline"] = ratio(double(rw.reads) / rw.elapsed, double(baseline.reads) / baseline.elapsed);
  out["lock_script_calls_per_read"] = reads_alone.cmds.scripts_per_op;
  out["lock_script_calls_per_write"] = writes_alone.cmds.scripts_per_op;
  out["cmds_per_read"] = reads_alone.cmds.per_op;
  out["cmds_per_write"] = writes_alone.cmds.per_op;
  out["baseline"] = report(baseline);
  bool safe = out["safety_ok"].as_bool() && report(baseline)["safety_ok"].as_bool() &&
              report(reads_alone)["safety_ok"].as_bool() && report(writes_alone)["safety_ok"].as_bool();
  bool capped = rw.capped || baseline.capped || reads_alone.capped || writes_alone.capped;
  if (w6_processes() > 1) {
    auto split = co_await w6_across_processes(b, true);
    auto split_baseline = co_await w6_across_processes(b, false);
    split["read_cs_ratio_to_baseline"] =
        ratio(split.at("read_cs_per_s").to_number<double>(), split_baseline.at("read_cs_per_s").to_number<double>());
    safe = safe && split["safety_ok"].as_bool() && split_baseline["safety_ok"].as_bool();
    capped = capped || split["capped"].as_bool() || split_baseline["capped"].as_bool();
    split["baseline"] = std::move(split_baseline);
    out["across_processes"] = std::move(split);
  }
  out["capped"] = capped;
  out["safety_ok"] = safe;
  co_return out;
}

}  // namespace redisync::cli::bench
