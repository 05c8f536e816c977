#pragma once

// What W6's run in one process (bench_rw.cpp) and its run across processes (bench_rw_processes.cpp)
// share: one run of the workload's sections by a number of tasks, and its report.

#include "cli/lab/bench/bench.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace redisync::cli::bench {

inline std::string const counter_key = "bench:w6:counter";

// A hold's interval, as its task saw it: from the grant's arrival to the release's call, both
// inside the server's hold, in ns of the monotonic clock, which all processes of a machine share.
struct interval {
  bool write;
  std::int64_t from_ns, to_ns;
};

inline std::int64_t monotonic_ns(clock_type::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

struct w6_run {
  std::int64_t done = 0, reads = 0, writes = 0, max_readers = 0, counter = 0;
  std::int64_t read_saw_change = 0;  // a read that saw the counter other than the writes completed
  std::int64_t write_runs = 0;       // writes that came after a read: writes in a row are cheaper
  std::vector<double> read_waits, write_waits;
  std::vector<interval> holds;  // only for a share of a run across processes
  double elapsed = 0;
  double client_cpu_s = 0;                // of the processes that ran it
  double server_cpu_s = 0, script_s = 0;  // Redis's, and its time in scripts (EVALSHA)
  bool capped = false;
  command_delta cmds;

  // What Redis did between two snapshots, for the `done` sections of the run.
  void add_server_totals(server_totals const& before, server_totals const& after) {
    cmds = delta(before.calls, after.calls, done);
    server_cpu_s = after.cpu_s - before.cpu_s;
    script_s = (after.script_us - before.script_us) / 1e6;
  }
};

// How a run is carried out: the whole in this process, or one process's share of it.
struct w6_share {
  bool whole = true;  // resets the counter, counts commands, checks each read against the writes
};

asio::awaitable<std::int64_t> read_counter(client& c, std::string const& counter);

// Which of the workload's `m` sections are writes (mulberry32, seed 1).
std::vector<bool> section_kinds(std::int64_t m);

// `read_write`: under the read-write lock; otherwise every section under the reentrant lock.
// `writes`: which sections are writes.
asio::awaitable<w6_run> run_w6(bench_context& b, bool read_write, std::vector<bool> const& writes,
                               std::string const& name, std::int64_t tasks, w6_share share = {});

json::object report(w6_run const& r);

// W6_P (default 2): the processes of W6's second run; 1 runs it in one process only.
std::int64_t w6_processes();

// The run across W6_P children of this process (W6_C tasks in all), all starting at once.
asio::awaitable<json::object> w6_across_processes(bench_context& b, bool read_write);

}  // namespace redisync::cli::bench
