#pragma once

// What a client has done so far, as counters, gauges and histograms: always on, and cheap enough
// for it (a few relaxed atomic additions per acquire and hold). client::metrics() takes a
// snapshot from any thread; redisync/prometheus.hpp (an optional part) exports it.
//
// Lock names are not labels: a service with a lock per order would make a series per order. With
// config::metrics_group_separator set, names are also counted by group (the part of a name before
// the separator), at most config::metrics_group_limit groups.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace redisync {

// What was acquired: the kind of lock, semaphore or election.
enum class primitive : std::uint8_t {
  lock,          // reentrant lock
  fair_lock,
  read_lock,     // a read-write lock's read side
  write_lock,    // its write side
  semaphore,     // Redisson's semaphore (no hold, so no hold time)
  permits,       // leased permits
  fair_permits,
  multi_lock,    // the acquire of several locks as one (its members' holds count as their kinds)
  election,      // a campaign that won
};
inline constexpr std::size_t primitive_count = 9;

// How an acquire ended.
enum class acquire_outcome : std::uint8_t {
  acquired,
  timed_out,  // a bounded wait ran out (try_acquire without a hold)
  cancelled,  // the caller cancelled it
  failed,     // any other error
};
inline constexpr std::size_t acquire_outcome_count = 4;

// Why a hold was lost.
enum class loss_cause : std::uint8_t {
  expired,         // its validity ran out: renewals failed or came too late (a stall, a lost connection)
  gone,            // the server no longer had it (deleted, expired there, evicted)
  deleted,         // this client force-released the lock
  stopped,         // the client stopped (stop(), or a shutdown that ran out of time) while holding
  taken,           // another owner holds the lock on the server now
  master_changed,  // gone from the server after a failover since it was granted (not replicated in time)
};
inline constexpr std::size_t loss_cause_count = 6;

std::string_view to_string(primitive p) noexcept;
std::string_view to_string(acquire_outcome o) noexcept;
std::string_view to_string(loss_cause c) noexcept;

// A histogram of durations, as Prometheus reads one: the count of observations at or below each
// bound (cumulative; the last bound is +infinity), their number and their sum.
struct duration_histogram {
  std::vector<double> upper_bounds_s;
  std::vector<std::uint64_t> cumulative_counts;
  std::uint64_t count = 0;
  double sum_s = 0;
};

// The acquires and holds of one primitive, or of one group of names.
struct acquire_metrics {
  std::array<std::uint64_t, acquire_outcome_count> acquires{};  // by acquire_outcome
  duration_histogram wait;  // from the call to its end, whatever the outcome
  duration_histogram hold;  // from the grant to the release or the loss
  std::array<std::uint64_t, loss_cause_count> lost{};  // by loss_cause

  std::uint64_t acquired(acquire_outcome o) const noexcept { return acquires[static_cast<std::size_t>(o)]; }
  std::uint64_t lost_by(loss_cause c) const noexcept { return lost[static_cast<std::size_t>(c)]; }
};

struct group_metrics {
  std::string group;  // the names' part before config::metrics_group_separator, or "other"
  acquire_metrics metrics;
};

struct metrics_snapshot {
  std::array<acquire_metrics, primitive_count> by_primitive{};
  std::vector<group_metrics> by_group;  // empty unless config::metrics_group_separator is set

  // Releases.
  std::uint64_t release_failures = 0;  // a release failed and is retried within the lease
  std::uint64_t releases_retried = 0;  // such a release went through later
  std::uint64_t grants_undone = 0;     // a grant that came after its caller gave up, undone
  // The watchdog.
  std::uint64_t renewal_calls = 0;
  std::uint64_t renewed_holds = 0;  // holds renewed by those calls (their ratio: holds per call)
  std::uint64_t renewal_failures = 0;
  // Now.
  std::size_t holds = 0;
  std::size_t waiters = 0;
  std::size_t subscriptions = 0;  // channels subscribed or lingering
  std::size_t connections_up = 0;  // connections with a completed handshake (one per node)
  // Connections.
  std::uint64_t connects = 0;  // completed handshakes; every one after the first per node is a reconnect
  std::uint64_t connect_failures = 0;
  std::uint64_t disconnects = 0;
  // Traffic.
  std::uint64_t round_trips = 0;  // requests written (a pipelined batch counts each request)
  std::uint64_t socket_writes = 0;
  std::uint64_t script_loads = 0;       // SCRIPT LOAD after a NOSCRIPT
  std::uint64_t reply_spin_hits = 0;    // replies read while polling (config::reply_spin)
  std::uint64_t reply_spin_misses = 0;  // polls that gave up and slept
  // Locks passed to a waiter of this client inside the release script.
  std::uint64_t handoffs = 0;

  acquire_metrics const& of(primitive p) const noexcept { return by_primitive[static_cast<std::size_t>(p)]; }
};

}  // namespace redisync
