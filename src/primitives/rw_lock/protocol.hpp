#pragma once

// The read-write lock's side of Redis, in Redisson's layout (rw_calls.lua says it whole): the lock
// hash with `mode`, reader fields `<owner>` and the writer's `<owner>:write`; one timeout key per
// read hold level, `{name}:<owner>:rwlock_timeout:<k>`; `redisson_rwlock:{name}` carries `0` when
// a read release frees the lock and `1` after a write release. Waiting writers mark themselves in
// `redisync_rwlock_writers:{name}`, a queue like the fair lock's (by arrival, each writer alive
// while its client is: sync::client_liveness), which only redisync's readers and releases read: a
// release that frees the lock gives it to the first live marked writer and publishes
// `grant <token> <owner>:write`. Fencing tokens of writes come from the lock's counter
// (lock_protocol::token_key_of).

#include <redisync/lock_kind.hpp>

#include "sync/client_core.hpp"

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace redisync::detail::rw_protocol {

std::string channel_of(std::string_view name);
std::string marks_key_of(std::string_view name);
// The prefix of the timeout keys: `{name}`, or the name when it has braces (Redisson's suffix rule).
std::string timeout_base_of(std::string_view name);
// The hash field of an owner's side: the owner for reads, `<owner>:write` for writes.
std::string field_of(lock_kind side, std::string_view owner);

// The arguments of rw_calls.lua's release of one level of `field`'s hold of `side`: `retry` is
// lock_protocol::retry_argument's (a read's names no token); `may_grant`: a release that frees the
// lock gives it to a waiting writer, if a live one is marked.
script_args release_args(sync::client_core& core, lock_kind side, std::string const& name, std::string const& field,
                         std::chrono::milliseconds lease, std::string retry,
                         bool may_grant = false);

// Whether a writer waits in `queue`.
bool writer_waits_in(sync::waiter_queue const& queue);

// The watchdog's renewal of read holds (rw_renew_reads.lua); writes renew like a lock's.
sync::renewal_kind const& read_renewal();

// The message of a release that gave the lock to a waiting writer: `grant <token> <owner>:write`.
struct grant_message {
  std::uint64_t token;
  std::string_view writer;  // its field, `<owner>:write`
};
std::optional<grant_message> read_grant(std::string_view message);

// A waiting writer's mark in the marks' queue is `<client>/<lease>:<owner>:write`: what follows the
// client is what a release needs to know to grant it the lock, the lease of the grant (ms) and the
// writer.
struct writer_mark {
  std::int64_t lease_ms;
  std::string_view writer;
};
std::optional<writer_mark> read_mark(std::string_view after_client);

// A grant gives the lock to the writer it names, if that writer waits here, and to nobody else (a
// grant to a writer of another client tells this client's first waiter that the server passed it
// over: the writer may be dead). Any other message may let a writer of this client in, or else its
// readers, who share: the first waiting writer tries, or, if none waits, every reader.
void on_message(sync::waiter_queue& queue, std::string_view message);

// A read was granted: this client's readers queued before its first waiting writer may share it.
void let_readers_share(sync::waiter_queue& queue);

// Takes a writer that gave up out of the marks, so that readers need not wait for its mark to end.
// With `release_grant`, a lock that a release gave it meanwhile is released too (nothing else of
// this client holds that write). Repeated while the outcome is unknown, until `lease` has passed.
boost::asio::awaitable<void> leave_marks(std::shared_ptr<sync::client_core> core, std::string name,
                                         std::string writer, std::chrono::milliseconds lease, bool release_grant);

// The arguments of rw_calls.lua's `force`: deletes the lock and its read timeouts, whoever holds
// either side, and wakes its waiters (it answers like lock_force_release.lua).
script_args force_args(std::string const& name);

}  // namespace redisync::detail::rw_protocol
