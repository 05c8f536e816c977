#pragma once

// The kinds of lock on Redisson's lock hash: the reentrant lock, the fair lock, and the two sides
// of a read-write lock. What tells them apart sits in one table (kinds.cpp): the lock handle, the
// release, the multi-lock and the metrics read it instead of switching on the kind.

#include <redisync/lock_kind.hpp>
#include <redisync/metrics.hpp>

#include "primitives/lock/acquire.hpp"
#include "script/script.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace redisync::detail::lock_protocol {

struct kind_facts {
  lock_kind kind;
  primitive counted_as;                              // what the metrics count a hold as
  std::string (*channel_of)(std::string_view name);  // where releases are told and waiters listen
  std::string (*field_of)(std::string_view owner);   // the owner's field in the lock hash
  script const* release_script;                      // releases, undos and releases made again
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
};

kind_facts const& facts_of(lock_kind kind);

}  // namespace redisync::detail::lock_protocol
