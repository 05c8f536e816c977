#include "metrics/metrics_registry.hpp"

#include <boost/asio/error.hpp>

#include <algorithm>
#include <limits>

namespace redisync {

std::string_view to_string(primitive p) noexcept {
  switch (p) {
    case primitive::lock: return "lock";
    case primitive::fair_lock: return "fair_lock";
    case primitive::read_lock: return "read_lock";
    case primitive::write_lock: return "write_lock";
    case primitive::semaphore: return "semaphore";
    case primitive::permits: return "permits";
    case primitive::fair_permits: return "fair_permits";
    case primitive::multi_lock: return "multi_lock";
    case primitive::election: return "election";
  }
  return "unknown";
}

std::string_view to_string(acquire_outcome o) noexcept {
  switch (o) {
    case acquire_outcome::acquired: return "acquired";
    case acquire_outcome::timed_out: return "timed_out";
    case acquire_outcome::cancelled: return "cancelled";
    case acquire_outcome::failed: return "failed";
  }
  return "unknown";
}

std::string_view to_string(loss_cause c) noexcept {
  switch (c) {
    case loss_cause::expired: return "expired";
    case loss_cause::gone: return "gone";
    case loss_cause::deleted: return "deleted";
    case loss_cause::stopped: return "stopped";
    case loss_cause::taken: return "taken";
    case loss_cause::master_changed: return "master_changed";
  }
  return "unknown";
}

}  // namespace redisync

namespace redisync::detail::metrics {

namespace {

constexpr auto relaxed = std::memory_order_relaxed;

// The bounds in nanoseconds, for comparing without a conversion per observation.
constexpr auto bounds_ns = [] {
  std::array<std::int64_t, bucket_bounds_s.size()> out{};
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::int64_t>(bucket_bounds_s[i] * 1e9);
  return out;
}();

}  // namespace

acquire_outcome outcome_of(boost::system::error_code ec, bool held) noexcept {
  if (held) return acquire_outcome::acquired;
  if (!ec) return acquire_outcome::timed_out;
  return ec == boost::asio::error::operation_aborted ? acquire_outcome::cancelled : acquire_outcome::failed;
}

void duration_recorder::observe(std::chrono::nanoseconds d) noexcept {
  auto const ns = std::max<std::int64_t>(d.count(), 0);
  auto const bucket = std::lower_bound(bounds_ns.begin(), bounds_ns.end(), ns) - bounds_ns.begin();
  counts_[static_cast<std::size_t>(bucket)].fetch_add(1, relaxed);
  sum_ns_.fetch_add(static_cast<std::uint64_t>(ns), relaxed);
}

duration_histogram duration_recorder::snapshot() const {
  duration_histogram out;
  out.upper_bounds_s.assign(bucket_bounds_s.begin(), bucket_bounds_s.end());
  out.upper_bounds_s.push_back(std::numeric_limits<double>::infinity());
  std::uint64_t total = 0;
  for (auto const& c : counts_) {
    total += c.load(relaxed);
    out.cumulative_counts.push_back(total);
  }
  out.count = total;
  out.sum_s = static_cast<double>(sum_ns_.load(relaxed)) / 1e9;
  return out;
}

void acquire_recorder::acquire_ended(acquire_outcome o, std::chrono::nanoseconds waited) noexcept {
  acquires_[static_cast<std::size_t>(o)].fetch_add(1, relaxed);
  wait_.observe(waited);
}

void acquire_recorder::hold_ended(std::chrono::nanoseconds held, std::optional<loss_cause> lost) noexcept {
  hold_.observe(held);
  if (lost) lost_[static_cast<std::size_t>(*lost)].fetch_add(1, relaxed);
}

acquire_metrics acquire_recorder::snapshot() const {
  acquire_metrics out;
  for (std::size_t i = 0; i < acquires_.size(); ++i) out.acquires[i] = acquires_[i].load(relaxed);
  out.wait = wait_.snapshot();
  out.hold = hold_.snapshot();
  for (std::size_t i = 0; i < lost_.size(); ++i) out.lost[i] = lost_[i].load(relaxed);
  return out;
}

metrics_registry::metrics_registry(std::string group_separator, std::size_t group_limit)
    : group_separator_{std::move(group_separator)}, group_limit_{group_limit} {}

void metrics_registry::acquire_ended(primitive p, std::string_view name, acquire_outcome o,
                                     std::chrono::nanoseconds waited) {
  by_primitive_[static_cast<std::size_t>(p)].acquire_ended(o, waited);
  if (group_separator_.empty()) return;
  std::lock_guard lock{groups_mutex_};
  group_of(name).acquire_ended(o, waited);
}

void metrics_registry::hold_ended(primitive p, std::string_view name, std::chrono::nanoseconds held,
                                  std::optional<loss_cause> lost) {
  by_primitive_[static_cast<std::size_t>(p)].hold_ended(held, lost);
  if (group_separator_.empty()) return;
  std::lock_guard lock{groups_mutex_};
  group_of(name).hold_ended(held, lost);
}

acquire_recorder& metrics_registry::group_of(std::string_view name) {
  auto const end = name.find(group_separator_);
  std::string_view group = end == std::string_view::npos ? std::string_view{"other"} : name.substr(0, end);
  auto it = groups_.find(group);
  if (it == groups_.end()) {
    // Past the limit, every new group is "other": the series stay bounded whatever the names.
    if (groups_.size() >= group_limit_) group = "other";
    it = groups_.try_emplace(std::string{group}, std::make_unique<acquire_recorder>()).first;
  }
  return *it->second;
}

metrics_snapshot metrics_registry::snapshot() const {
  metrics_snapshot out;
  for (std::size_t i = 0; i < by_primitive_.size(); ++i) out.by_primitive[i] = by_primitive_[i].snapshot();
  {
    std::lock_guard lock{groups_mutex_};
    for (auto const& [group, recorder] : groups_) out.by_group.push_back({group, recorder->snapshot()});
  }
  out.release_failures = events(event_kind::release_failed);
  out.releases_retried = events(event_kind::release_retried);
  out.grants_undone = events(event_kind::grant_undone);
  out.renewal_failures = events(event_kind::renewal_failed);
  out.connect_failures = events(event_kind::connect_failed);
  out.disconnects = events(event_kind::disconnected);
  auto const ups = events(event_kind::connected);
  out.connections_up = ups > out.disconnects ? static_cast<std::size_t>(ups - out.disconnects) : 0;
  return out;
}

}  // namespace redisync::detail::metrics
