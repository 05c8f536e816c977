// The reentrant lock's row of the lock kinds (lock_protocol/kinds.hpp).

#include "primitives/lock/acquire.hpp"
#include "primitives/lock_protocol/kinds.hpp"
#include "primitives/lock_protocol/protocol.hpp"
#include "sync/launch_acquire.hpp"

#include <scripts.hpp>

#include <array>

namespace redisync::detail::lock_protocol {

namespace {

// lock_calls.lua's `release`, the shortest call, for a first call with no hand-off; else
// `release-with`, with the count of a lost call (or the hold a release made again ends) and the
// waiter the lock goes to.
io::outgoing release_call(release_call_args const& a) {
  std::string const lease = std::to_string(a.lease.count());
  if (a.retry.empty() && a.next_owner.empty()) {
    std::array<std::string_view, 1> const keys{a.name};
    std::array<std::string_view, 4> const argv{"release", a.field, lease, a.channel};
    return script_call(scripts::lock_calls, a.slot, keys, argv, a.by_digest);
  }
  std::string const token_key = token_key_of(a.name);
  std::string const next_lease = a.next_lease ? std::to_string(a.next_lease->count()) : "";
  std::array<std::string_view, 2> const keys{a.name, token_key};
  bool const keep = a.core.cfg().persistent_fencing_counter;
  std::array<std::string_view, 7> const argv{keep ? "release-with+" : "release-with", a.field, lease, a.channel,
                                             a.retry, a.next_owner, next_lease};
  return script_call(scripts::lock_calls, a.slot, keys, argv, a.by_digest);
}

script_args undo_args(sync::client_core& core, std::string const& name, std::string const& field,
                      std::int64_t count_before) {
  return {{name, token_key_of(name)},
          {"release-with", field, watchdog_lease(core), channel_of(name), retry_argument(count_before + 1), "", ""}};
}

}  // namespace

kind_facts const reentrant_facts{.kind = lock_kind::reentrant,
                                 .counted_as = primitive::lock,
                                 .channel_of = channel_of,
                                 .field_of = same_as_owner,
                                 .release_script = &scripts::lock_calls,
                                 .release_call = release_call,
                                 .hands_over = true,
                                 .called_in_turn = false,
                                 .own_token = true,
                                 .multi_operation = "lock",
                                 .multi_key_of = the_lock_itself,
                                 .acquire = sync::launch_acquire<reentrant_lock::reentrant_acquire, acquire_args, acquire_signature>,
                                 .try_acquire = sync::launch_acquire<reentrant_lock::reentrant_acquire, acquire_args, try_acquire_signature>,
                                 .undo_args = undo_args,
                                 .force_script = &scripts::lock_force_release,
                                 .force_args = force_hash_args};

}  // namespace redisync::detail::lock_protocol
