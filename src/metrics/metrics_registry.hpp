#pragma once

// The client's metrics as they happen: relaxed atomic counters and fixed-bucket histograms that any
// thread may add to and read, so that recording costs a few additions on the hot path; the groups
// of names (config::metrics_group_separator) behind a mutex, used only when that option is set.

#include <redisync/event.hpp>
#include <redisync/metrics.hpp>

#include <boost/system/error_code.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace redisync::detail::metrics {

// Bucket bounds from 100 µs (a loopback round trip) to 5 minutes (a long hold), and +infinity.
inline constexpr std::array<double, 19> bucket_bounds_s{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                                       0.025,  0.05,    0.1,    0.25,  0.5,    1,     2.5,
                                                       5,      10,      30,     60,    300};

class duration_recorder {
 public:
  void observe(std::chrono::nanoseconds d) noexcept;
  duration_histogram snapshot() const;

 private:
  std::array<std::atomic<std::uint64_t>, bucket_bounds_s.size() + 1> counts_{};
  std::atomic<std::uint64_t> sum_ns_{0};
};

class acquire_recorder {
 public:
  void acquire_ended(acquire_outcome o, std::chrono::nanoseconds waited) noexcept;
  void hold_ended(std::chrono::nanoseconds held, std::optional<loss_cause> lost) noexcept;
  acquire_metrics snapshot() const;

 private:
  std::array<std::atomic<std::uint64_t>, acquire_outcome_count> acquires_{};
  duration_recorder wait_;
  duration_recorder hold_;
  std::array<std::atomic<std::uint64_t>, loss_cause_count> lost_{};
};

// How an acquire that completed with `ec`, holding or not, ended.
acquire_outcome outcome_of(boost::system::error_code ec, bool held) noexcept;

class metrics_registry {
 public:
  // `group_separator` empty: no groups.
  metrics_registry(std::string group_separator, std::size_t group_limit);

  void acquire_ended(primitive p, std::string_view name, acquire_outcome o, std::chrono::nanoseconds waited);
  void hold_ended(primitive p, std::string_view name, std::chrono::nanoseconds held, std::optional<loss_cause> lost);
  void count(event_kind k) noexcept { events_[static_cast<std::size_t>(k)].fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t events(event_kind k) const noexcept {
    return events_[static_cast<std::size_t>(k)].load(std::memory_order_relaxed);
  }

  // The acquires, holds and events; the caller adds what the client's layers count themselves.
  metrics_snapshot snapshot() const;

 private:
  // The recorder of `name`'s group (under groups_mutex_).
  acquire_recorder& group_of(std::string_view name);

  std::array<acquire_recorder, primitive_count> by_primitive_;
  // How many events of each kind the client emitted (config::on_event or not): failures of
  // renewals and releases, connects and disconnects.
  std::array<std::atomic<std::uint64_t>, event_kind_count> events_{};
  std::string const group_separator_;
  std::size_t const group_limit_;
  mutable std::mutex groups_mutex_;
  std::map<std::string, std::unique_ptr<acquire_recorder>, std::less<>> groups_;
};

}  // namespace redisync::detail::metrics
