#pragma once

// The kinds of lock on Redisson's lock hash: the reentrant lock, the fair lock, and the two sides
// of a read-write lock. What tells them apart is one row per kind, defined in the kind's own
// folder (lock/kind.cpp, fair_lock/kind.cpp, rw_lock/kind.cpp): the lock handle, the release, the
// multi-lock and the metrics read the row instead of switching on the kind. A new kind on the hash
// is a value of lock_kind, its folder with its row, and its line in kinds.cpp.

#include <redisync/lock_kind.hpp>
#include <redisync/metrics.hpp>

#include "io/outgoing.hpp"
#include "primitives/lock_protocol/acquire.hpp"
#include "script/script.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace redisync::detail::lock_protocol {

// One release call of a level of `field` (the owner's field of the kind) on `name`.
struct release_call_args {
  sync::client_core& core;
  std::string_view name;
  std::string_view field;
  routing::slot_type slot;
  std::chrono::milliseconds lease;  // of the hold, kept on a partial release
  std::string_view channel;         // where the kind's waiters listen
  std::string retry;                // retry_argument: '' for a first call
  // A waiter of this client the last level goes to ('' for none), with its lease.
  std::string_view next_owner;
  std::optional<std::chrono::milliseconds> next_lease;
  bool by_digest;
};

struct kind_facts {
  lock_kind kind;
  primitive counted_as;                              // what the metrics count a hold as
  std::string (*channel_of)(std::string_view name);  // where releases are told and waiters listen
  std::string (*field_of)(std::string_view owner);   // the owner's field in the lock hash
  script const* release_script;                      // releases, undos and releases made again
  io::outgoing (*release_call)(release_call_args const& a);
  bool hands_over;  // a last level goes straight to this client's next waiter of the same kind
  bool called_in_turn;  // waiters are called by name in the server's order (not woken to try)
  bool own_token;   // each hold has a fencing token of its own (reads share token 0)
  // A multi-lock member of this kind (reads are refused: a multi-lock takes exclusive locks):
  // multi_calls.lua's operation, and the member's third key (its queue, its marks, or the lock).
  std::string_view multi_operation;
  std::string (*multi_key_of)(std::string_view name);
  void (*acquire)(std::shared_ptr<sync::client_core> core, acquire_args a,
                  boost::asio::any_completion_handler<acquire_signature> h);
  void (*try_acquire)(std::shared_ptr<sync::client_core> core, acquire_args a,
                      boost::asio::any_completion_handler<try_acquire_signature> h);
  // The release of `field`'s level of `name` above `count_before`, and of nothing else: an undo,
  // safe to repeat (release_script's arguments).
  script_args (*undo_args)(sync::client_core& core, std::string const& name, std::string const& field,
                           std::int64_t count_before);
  // Deleting the lock whoever holds it, and telling its waiters.
  script const* force_script;
  script_args (*force_args)(std::string const& name);
};

kind_facts const& facts_of(lock_kind kind);

// The rows, each in its kind's folder.
extern kind_facts const reentrant_facts;
extern kind_facts const fair_facts;
extern kind_facts const read_facts;
extern kind_facts const write_facts;

// What most rows say: the owner's field is the owner itself; a member's third key is the lock.
inline std::string same_as_owner(std::string_view owner) { return std::string{owner}; }
inline std::string the_lock_itself(std::string_view name) { return std::string{name}; }
// The watchdog lease as an argument: the lease an undo keeps on a partial release.
inline std::string watchdog_lease(sync::client_core const& core) {
  return std::to_string(core.cfg().watchdog_lease.count());
}
// A forced release of a lock that is only its hash (lock_force_release.lua).
script_args force_hash_args(std::string const& name);

}  // namespace redisync::detail::lock_protocol
