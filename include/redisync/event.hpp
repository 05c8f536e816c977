#pragma once

// What the client tells the application about its holds and its connection, through
// config::on_event: a renewal that failed, a hold that turned uncertain or was lost, a release that
// failed and is retried, an unlock message the server refused; a connection attempt, its failure
// and why, a disconnect, the next attempt. Silent unless a handler is set. The handler runs on the
// client's strand: keep it short and never block in it.

#include <boost/system/error_code.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>

namespace redisync {

enum class event_level : std::uint8_t { debug, info, warning, error };

enum class event_kind : std::uint8_t {
  renewal_failed,        // a renewal call failed (`error` says why); its holds are uncertain
  hold_uncertain,        // renewals of this hold fail; it is lost at its deadline unless one succeeds
  hold_lost,             // the hold's deadline passed, or its owner field vanished
  release_failed,        // a release failed: renewal stopped, the release is retried within the lease
  release_retried,       // a release that had failed went through in the background
  waiters_not_notified,  // a lock was released, but the server refused the unlock message
  grant_undone,          // an acquire whose caller gave up, or whose reply was unreadable, was undone
  outcome_resolved,      // an acquire or release whose outcome a lost connection hid was settled
  // The connection (no lock or owner; `detail` names the address, and for a failure the step).
  connecting,            // an attempt to connect begins
  connected,             // the handshake completed: requests flow
  connect_failed,        // resolving, connecting, TLS or the handshake failed (`error` says why)
  disconnected,          // an established connection ended (`error` says why)
  reconnect_scheduled,   // the next attempt; `detail` says in how many ms
  // The server may evict lock keys (`detail` names its maxmemory-policy: anything but
  // noeviction): a lock can vanish under its holder. Once per client and policy.
  eviction_possible,
  // Fewer replicas than config::wait_replicas acknowledged an acquire in time (`detail` says how
  // many): what it granted was given back and the acquire failed with error::not_replicated.
  not_replicated,
  // A release was made again where the lock is served now and freed the lock there: a release
  // that a master acknowledged just before it stopped being master (a failover), or the release
  // of a hold given up for lost (`detail` says which).
  release_made_again,
};
// The number of kinds (the last one's value + 1): keep it next to the last.
inline constexpr std::size_t event_kind_count = static_cast<std::size_t>(event_kind::release_made_again) + 1;

struct event {
  event_kind kind;
  event_level level;
  std::string_view lock;   // the lock's name
  std::string_view owner;  // the owner id, when one hold is concerned
  boost::system::error_code error;
  std::string_view detail;  // the server's words, a count, or the address and step
};

using event_handler = std::function<void(event const&)>;

std::string_view to_string(event_kind kind) noexcept;
std::string_view to_string(event_level level) noexcept;

}  // namespace redisync
