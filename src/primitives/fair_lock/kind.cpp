// The fair lock's row of the lock kinds (lock_protocol/kinds.hpp).

#include "primitives/fair_lock/acquire.hpp"
#include "primitives/fair_lock/protocol.hpp"
#include "primitives/lock_protocol/kinds.hpp"
#include "primitives/lock_protocol/protocol.hpp"
#include "sync/launch_acquire.hpp"

#include <scripts.hpp>

namespace redisync::detail::lock_protocol {

namespace {

// fair_calls.lua's `release`: the next waiter of the server's queue is called; a waiter of this
// client gets the lock straight away only if the server finds it at the head.
io::outgoing release_call(release_call_args const& a) {
  auto const args = fair_protocol::release_args(a.core, std::string{a.name}, std::string{a.field}, a.lease, a.retry,
                                                a.next_owner, a.next_lease);
  return script_call(scripts::fair_calls, a.slot, args, a.by_digest);
}

script_args undo_args(sync::client_core& core, std::string const& name, std::string const& field,
                      std::int64_t count_before) {
  return fair_protocol::release_args(core, name, field, core.cfg().watchdog_lease, retry_argument(count_before + 1), {},
                                     {});
}

}  // namespace

kind_facts const fair_facts{.kind = lock_kind::fair,
                            .counted_as = primitive::fair_lock,
                            .channel_of = channel_of,
                            .field_of = same_as_owner,
                            .release_script = &scripts::fair_calls,
                            .release_call = release_call,
                            .hands_over = true,
                            .called_in_turn = true,
                            .own_token = true,
                            .multi_operation = "fair",
                            .multi_key_of = fair_protocol::queue_key_of,
                            .acquire = sync::launch_acquire<fair_protocol::fair_acquire, acquire_args, acquire_signature>,
                            .try_acquire = sync::launch_acquire<fair_protocol::fair_acquire, acquire_args, try_acquire_signature>,
                            .undo_args = undo_args,
                            .force_script = &scripts::lock_force_release,
                            .force_args = force_hash_args};

}  // namespace redisync::detail::lock_protocol
