// The rows of a read-write lock's two sides in the lock kinds (lock_protocol/kinds.hpp).

#include "primitives/lock_protocol/kinds.hpp"
#include "primitives/lock_protocol/protocol.hpp"
#include "primitives/rw_lock/acquire.hpp"
#include "primitives/rw_lock/protocol.hpp"

#include <scripts.hpp>

namespace redisync::detail::lock_protocol {

namespace {

namespace asio = boost::asio;

std::string write_field(std::string_view owner) { return rw_protocol::field_of(lock_kind::write, owner); }

// rw_calls.lua's release of `side`: its message wakes the waiters of either side. A release that
// frees the lock may give it to a waiting writer of another client, unless a writer of this client
// waits: that one tries at once, behind the release.
template <lock_kind side>
io::outgoing release_call(release_call_args const& a) {
  std::string const channel{a.channel};
  bool const may_grant = !(a.core.has_waiters(channel) && rw_protocol::writer_waits_in(a.core.queue(channel)));
  auto const args = rw_protocol::release_args(a.core, side, std::string{a.name}, std::string{a.field}, a.lease,
                                              a.retry, may_grant);
  return script_call(scripts::rw_calls, a.slot, args, a.by_digest);
}

template <lock_kind side>
script_args undo_args(sync::client_core& core, std::string const& name, std::string const& field,
                      std::int64_t count_before) {
  return rw_protocol::release_args(core, side, name, field, core.cfg().watchdog_lease, retry_argument(count_before + 1));
}

template <lock_kind side, class Signature>
void acquire(std::shared_ptr<sync::client_core> core, acquire_args a, asio::any_completion_handler<Signature> h) {
  rw_protocol::start_acquire(side, std::move(core), std::move(a), std::move(h));
}

}  // namespace

kind_facts const read_facts{.kind = lock_kind::read,
                            .counted_as = primitive::read_lock,
                            .channel_of = rw_protocol::channel_of,
                            .field_of = same_as_owner,
                            .release_script = &scripts::rw_calls,
                            .release_call = release_call<lock_kind::read>,
                            .hands_over = false,
                            .called_in_turn = false,
                            .own_token = false,
                            .multi_operation = {},
                            .multi_key_of = the_lock_itself,
                            .acquire = acquire<lock_kind::read, acquire_signature>,
                            .try_acquire = acquire<lock_kind::read, try_acquire_signature>,
                            .undo_args = undo_args<lock_kind::read>,
                            .force_script = &scripts::rw_calls,
                            .force_args = rw_protocol::force_args};

kind_facts const write_facts{.kind = lock_kind::write,
                             .counted_as = primitive::write_lock,
                             .channel_of = rw_protocol::channel_of,
                             .field_of = write_field,
                             .release_script = &scripts::rw_calls,
                             .release_call = release_call<lock_kind::write>,
                             .hands_over = false,
                             .called_in_turn = false,
                             .own_token = true,
                             .multi_operation = "write",
                             .multi_key_of = rw_protocol::marks_key_of,
                             .acquire = acquire<lock_kind::write, acquire_signature>,
                             .try_acquire = acquire<lock_kind::write, try_acquire_signature>,
                             .undo_args = undo_args<lock_kind::write>,
                             .force_script = &scripts::rw_calls,
                             .force_args = rw_protocol::force_args};

}  // namespace redisync::detail::lock_protocol
