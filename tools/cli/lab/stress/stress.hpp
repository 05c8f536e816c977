#pragma once

// What the workers of `redisync stress` share: options, tallies, the history file and the error
// report. The lock workers are stress.cpp's; a semaphore's, stress_permits.cpp's; a multi-lock's,
// stress_multi.cpp's; a latch's, stress_latch.cpp's.

#include "cli/common/json_text.hpp"
#include "cli/common/common.hpp"
#include "cli/common/metrics_port.hpp"

#include <boost/json.hpp>
#include <fmt/core.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

namespace redisync::cli {

enum class stress_kind { lock, fair, read, write, semaphore, permits, fair_permits, multi, election, latch };

struct stress_options {
  std::string url;
  std::string lock;
  stress_kind kind = stress_kind::lock;
  int workers = 1;
  int iterations = 100;
  int hold_ms = 0;
  std::optional<int> lease_ms;
  int watchdog_ms = 30000;
  std::string counter;
  std::optional<std::string> fence_key;
  std::optional<std::string> history;
  int retry_ms = 0;  // > 0: a failed acquire is tried again after this pause, not counted as an iteration
  std::int64_t permits = 0;  // a semaphore's
  metrics_options metrics;
};

struct totals {
  std::int64_t acquired = 0, released = 0, errors = 0, lost = 0, accepted = 0, rejected = 0;
  std::int64_t unknown = 0;  // writes whose reply was lost with the connection: they may have run
  // Read-write lock: the most readers seen at once, writes seen overlapping another hold, and reads
  // that saw the counter change under them.
  std::int64_t max_concurrent_readers = 0, overlaps = 0, changed_under_read = 0;
  // Semaphores: the most holders seen at once (from every process's hold windows).
  std::int64_t max_holders = 0;
};

class history_log {
 public:
  explicit history_log(std::optional<std::string> const& path) {
    if (!path) return;
    file_.open(*path, std::ios::app);
    if (!file_.is_open()) {
      throw usage_error{fmt::format("cannot write the history file '{}': {}", *path, std::strerror(errno))};
    }
  }
  // `extra`: the event's own fields (a detail, a validity deadline, a value written).
  void write(std::string_view event, std::string_view owner, std::uint64_t token, boost::json::object extra = {}) {
    if (!file_.is_open()) return;
    boost::json::object line{{"t_ns", monotonic_ns()}, {"pid", ::getpid()}, {"event", event},
                      {"owner", owner}, {"token", token}};
    for (auto& field : extra) line.insert(std::move(field));
    // One flushed line per event: a process killed mid-run leaves a readable history.
    file_ << json_text(line) << std::endl;
    if (!file_ && failure_.empty()) failure_ = std::strerror(errno);
  }

  // The client's events (config::on_event) name a hold by its own id, held::owner_id() (a permit's
  // is `<owner>:p<n>`); the history by the worker's owner and the token. A worker names its hold
  // here from its grant to its end, so that an event about it is logged as the hold's.
  void name_hold(std::string id, std::string_view owner, std::uint64_t token) {
    if (!file_.is_open()) return;
    holds_.insert_or_assign(std::move(id), std::pair{std::string{owner}, token});
  }
  void forget_hold(std::string const& id) { holds_.erase(id); }
  // `event` for the hold whose id is `id`, if a worker named it.
  void write_for_hold(std::string_view event, std::string_view id) {
    if (auto const h = holds_.find(id); h != holds_.end()) write(event, h->second.first, h->second.second);
  }

  // Why a line could not be written (a full disk), or empty.
  std::string const& failure() const noexcept { return failure_; }

 private:
  std::ofstream file_;
  std::string failure_;
  std::map<std::string, std::pair<std::string, std::uint64_t>, std::less<>> holds_;  // id -> owner, token
};

// The first error of each kind goes to stderr with its cause; the rest are only counted.
class error_report {
 public:
  void add(std::string_view stage, boost::system::error_code ec) {
    if (!seen_.insert({std::string{stage}, ec}).second) return;
    std::cerr << fmt::format("redisync stress: {} failed: {} [{}:{}] (later errors of this kind are "
                             "only counted)\n",
                             stage, ec.message(), ec.category().name(), ec.value());
  }

 private:
  std::set<std::pair<std::string, boost::system::error_code>> seen_;
};

// An acquire failed with `ec`: counted, reported and logged; with --retry-ms, true after the pause
// (the caller tries the iteration again).
boost::asio::awaitable<bool> acquire_failed(stress_options const& o, totals& t, history_log& log, error_report& report,
                                            std::string_view owner, boost::system::error_code ec);

// A worker of a semaphore or of leased permits: each iteration takes one permit, counts the holders
// whose windows are open (never more than the permits), INCRs the counter and gives it back.
boost::asio::awaitable<void> permit_worker(client& c, stress_options const& o, totals& t, history_log& log,
                                           error_report& report);

// A worker of a multi-lock (stress_multi.cpp): each iteration takes every name of `--lock a,b,c`
// at once and counts each name's own counter up.
boost::asio::awaitable<void> multi_worker(client& c, stress_options const& o, totals& t, history_log& log,
                                          error_report& report);
// A worker of a latch used as a barrier across processes (stress_latch.cpp): each iteration counts
// down the latch `<lock>:<i>` (set to --permits if unset) and waits until it opens.
boost::asio::awaitable<void> latch_worker(client& c, stress_options const& o, totals& t, history_log& log,
                                          error_report& report);
// The names of a multi-lock's `--lock`, split at commas.
std::vector<std::string> multi_names(std::string const& list);

}  // namespace redisync::cli
