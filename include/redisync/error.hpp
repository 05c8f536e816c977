#pragma once

// The error codes of redisync and their category. Every asynchronous operation completes with a
// boost::system::error_code first; codes from this enum belong to redisync::error_category().

#include <boost/system/error_code.hpp>

#include <string_view>
#include <type_traits>

namespace redisync {

enum class error {
  // Argument and usage errors (reported before any I/O).
  invalid_argument = 1,
  not_owner,       // release by an owner that does not hold the lock
  not_held,        // a guard that was already released
  lease_lost,      // the lease expired or the owner field vanished while held
  timeout,         // a bounded wait ran out
  // Connection state.
  not_connected,   // no connection and the request asked not to wait for one
  ambiguous,       // written, but the connection dropped before the reply: it may have run
  connection_closed,
  auth_failed,     // WRONGPASS, NOAUTH or NOPERM during the handshake: not retried
  handshake_failed,
  health_check_failed,
  protocol_error,  // the server sent something that is not RESP3
  // Server replies (mapped from the error prefix).
  server_error,    // any other -ERR
  wrong_type,      // WRONGTYPE
  no_script,       // NOSCRIPT
  read_only,       // READONLY
  loading,         // LOADING (retried with backoff until the retry budget ends)
  busy,            // BUSY (retried with backoff until the retry budget ends)
  out_of_memory,   // OOM
  no_replicas,     // NOREPLICAS
  moved,           // MOVED
  ask,             // ASK
  try_again,       // TRYAGAIN
  cluster_down,    // CLUSTERDOWN
  no_permission,   // NOPERM
  unexpected_reply,  // a reply of a shape the caller did not expect
  token_exhausted,   // the lock's fencing-token counter is at 2^63 - 1 (TOKENLIMIT from our scripts)
  shutting_down,     // the client is shutting down (client::shutdown): it takes no more acquires
  upgrade_refused,   // a write acquire by an owner that holds a read of the read-write lock
  not_started,       // the client was never started (client::start() or client::run())
  empty_handle,      // a handle or owner made by default or moved from: it belongs to no client
  too_deep,          // the owner holds the lock max_hold_depth levels deep (DEPTH from our scripts)
  cross_slot,        // a request's keys hash to more than one cluster slot (CROSSSLOT)
  not_replicated,    // fewer replicas than config::wait_replicas acknowledged an acquire in time
  too_many_permits,  // more permits asked for than the semaphore has in all (PERMITS from our scripts)
};

boost::system::error_category const& error_category() noexcept;

inline boost::system::error_code make_error_code(error e) noexcept {
  return {static_cast<int>(e), error_category()};
}

// Maps a server error text ("WRONGTYPE Operation against ...") to its code by prefix.
error error_from_server_text(std::string_view text) noexcept;

// The code of a server error reply that keeps the server's words: it compares equal to
// error_from_server_text(text) (ec == error::wrong_type holds), and its message() ends with
// "(server: <text>)". An operation that failed with a server error completes with such a code.
boost::system::error_code server_error_code(std::string_view text) noexcept;

// True for server errors that say "not now" rather than "never": the command did not run and may be
// sent again after a pause.
bool is_transient(error e) noexcept;

}  // namespace redisync

template <>
struct boost::system::is_error_code_enum<redisync::error> : std::true_type {};
