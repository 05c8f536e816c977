#pragma once

// What the workloads of `redisync bench` share: the knobs of WORKLOADS.md, percentiles, command
// counts from INFO commandstats, the clients of a run, tasks run to the cap, and the process's own
// CPU, memory and file descriptors.

#include "cli/common/common.hpp"

#include <redisync/redisync.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace redisync::cli::bench {

namespace asio = boost::asio;
namespace json = boost::json;
using clock_type = std::chrono::steady_clock;

inline constexpr std::int64_t many = 1'000'000'000;

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
  std::int64_t w6_c = env_number("W6_C", 16, 1, 10000);
  std::int64_t w6_m = env_number("W6_M", 8000, 1, many);
  std::int64_t w6_hold_us = env_number("W6_HOLD_US", 1000, 0, 60'000'000);
  std::int64_t s1_n = env_number("S1_N", 10000, 1, 1'000'000);
  std::int64_t s2_n = env_number("S2_N", 100000, 1, 10'000'000);
  std::int64_t s2_s = env_number("S2_S", 60, 1, 3600);
  std::int64_t s2_readers = env_number("S2_READERS", 0, 0, 1'000'000);  // per lock; 0: reentrant locks
  std::int64_t s3_w = env_number("S3_W", 1000, 0, 1'000'000);
  std::int64_t s3_k = env_number("S3_K", 500, 1, 100'000);
  std::int64_t s3_gap_ms = env_number("S3_GAP_MS", 50, 0, 10'000);  // between two kills
  std::int64_t s4_n = env_number("S4_N", 10000, 1, 1'000'000);
  std::int64_t s4_locks = env_number("S4_LOCKS", 10000, 0, 1'000'000);
  std::int64_t s4_hold_s = env_number("S4_HOLD_S", 15, 1, 3600);
  std::int64_t s5_r = env_number("S5_R", 10000, 1, 1'000'000);
  std::int64_t s5_wr = env_number("S5_WR", 9000, 0, 1'000'000);
  std::int64_t s5_ww = env_number("S5_WW", 1000, 0, 1'000'000);
};


double r2(double x);
// Nearest rank: sort, p = s[max(0, ceil(p/100 * n) - 1)].
double percentile(std::vector<double> v, double p);

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
// Calls per command from INFO commandstats.
asio::awaitable<stats_map> command_stats(client& admin);
// What Redis has done so far, from one INFO: calls per command, the microseconds it spent in
// scripts (EVALSHA), and its CPU seconds (user + system).
struct server_totals {
  stats_map calls;
  double script_us = 0;
  double cpu_s = 0;
  double used_memory = 0;  // bytes
};
asio::awaitable<server_totals> server_totals_now(client& admin);
// Calls of `command` between two snapshots; of every command but INFO.
std::int64_t calls(stats_map const& before, stats_map const& after, std::string const& command);
std::int64_t all_calls(stats_map const& before, stats_map const& after);

asio::awaitable<void> sleep_for(std::chrono::milliseconds d);
// Waits until `condition` holds, looking every 5 ms, at most `limit`; false if it never did.
asio::awaitable<bool> wait_until(std::function<bool()> condition, std::chrono::seconds limit);
// Queued in the client is not yet settled on the server: the last attempts may still run. Waits
// (30 s at most) until Redis runs almost no script for 300 ms, when waiting can be measured.
asio::awaitable<void> wait_until_scripts_settle(client& admin);
// Keys that exist: SCAN skips keys past their expiry, which DBSIZE still counts until Redis's
// expiry cycle gets to them.
asio::awaitable<std::int64_t> live_keys(client& admin);
// How many items the list `key` holds (the children of a run say they are ready in one).
asio::awaitable<std::int64_t> list_length(client& admin, std::string const& key);
struct key_counts {
  std::int64_t live = 0;
  std::int64_t without_expiry = 0;
};
asio::awaitable<key_counts> count_keys(client& admin);

// Holds taken by many handlers at once and released together; shared with the handlers, which may
// outlive the frame that made them if it ends by an exception.
struct hold_tally {
  std::vector<held> holds;
  std::int64_t answered = 0;  // acquires that completed, held or not
  std::int64_t errors = 0;
  std::size_t released = 0;   // releases answered
};

struct command_delta {
  double per_op = 0;
  double scripts_per_op = 0;
  json::object breakdown;
};
command_delta delta(stats_map const& before, stats_map const& after, std::int64_t per);

struct bench_context {
  params p;
  bool watchdog = false;
  client& c;
  client& admin;  // a second client: its commands are not the lock's
  std::string url;  // of the server, for child processes
  std::optional<std::chrono::microseconds> reply_spin;  // given to child processes too

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

// Runs `count` tasks and waits until they end or the cap passes (then 2 s of grace); true if capped.
asio::awaitable<bool> run_tasks(std::int64_t count, std::int64_t cap_s, bool& stop,
                                std::function<asio::awaitable<void>(int)> const& task);

// This process: CPU seconds (user + system), resident and peak resident memory, open descriptors.
double process_cpu_s();
std::int64_t rss_kb();
std::int64_t peak_rss_kb();
// What the program has allocated and not freed: a leak shows here exactly, where the resident size
// also moves with the allocator's own bookkeeping.
std::int64_t heap_in_use_kb();
std::int64_t open_fds();

// W6, read-mostly, under the read-write lock and, as its baseline, the reentrant lock (bench_rw.cpp).
// W4 on leased permits, or with `redisson` on Redisson's semaphore (bench_permits.cpp).
asio::awaitable<json::object> w4(bench_context& b, bool redisson);
asio::awaitable<json::object> w6(bench_context& b);
// One process's share of W6 across processes, started by w6 (`bench W6C`).
asio::awaitable<json::object> w6c(bench_context& b);

// The scale workloads (bench_scale.cpp): S1 with `cold` true or false, S2, S3.
// L1: a latch's wake-up of L1_N waiters in L1_P processes (`bench L1C` is such a process).
asio::awaitable<json::object> l1(bench_context& b);
asio::awaitable<json::object> l1c(bench_context& b);
asio::awaitable<json::object> s1(bench_context& b, bool cold, bool permits);
asio::awaitable<json::object> s2(bench_context& b);
asio::awaitable<json::object> s3(bench_context& b);
// E1: leader election's hand-over on resign and on a leader killed (bench_election.cpp).
asio::awaitable<json::object> e1(bench_context& b);
// M1: a multi-lock of 4 names against 4 acquires one after the other (bench_multi.cpp).
asio::awaitable<json::object> m1(bench_context& b);
// S4, fair waiters at scale (bench_fair.cpp).
asio::awaitable<json::object> s4(bench_context& b);
// S5, read-write crowds (bench_rw_scale.cpp).
asio::awaitable<json::object> s5(bench_context& b);

}  // namespace redisync::cli::bench
