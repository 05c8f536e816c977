#include "primitives/lock/kinds.hpp"

#include "primitives/fair_lock/acquire.hpp"
#include "primitives/fair_lock/protocol.hpp"
#include "primitives/lock/protocol.hpp"
#include "primitives/rw_lock/acquire.hpp"
#include "primitives/rw_lock/protocol.hpp"

#include <scripts.hpp>

#include <array>

namespace redisync::detail::lock_protocol {

namespace asio = boost::asio;

namespace {

std::string owner_itself(std::string_view owner) { return std::string{owner}; }
std::string write_field(std::string_view owner) { return rw_protocol::field_of(lock_kind::write, owner); }
std::string lock_itself(std::string_view name) { return std::string{name}; }

std::string watchdog_lease(sync::client_core const& core) { return std::to_string(core.cfg().watchdog_lease.count()); }

script_args lock_undo(sync::client_core& core, std::string const& name, std::string const& field,
                      std::int64_t count_before) {
  return {{name, token_key_of(name)},
          {"release-with", field, watchdog_lease(core), channel_of(name), retry_argument(count_before + 1), "", ""}};
}

script_args fair_undo(sync::client_core& core, std::string const& name, std::string const& field,
                      std::int64_t count_before) {
  return fair_protocol::release_args(core, name, field, core.cfg().watchdog_lease, retry_argument(count_before + 1),
                                     {}, {});
}

template <lock_kind side>
script_args rw_undo(sync::client_core& core, std::string const& name, std::string const& field,
                    std::int64_t count_before) {
  return rw_protocol::release_args(core, side, name, field, core.cfg().watchdog_lease,
                                   retry_argument(count_before + 1));
}

template <lock_kind side, class Signature>
void rw_acquire(std::shared_ptr<sync::client_core> core, acquire_args a, asio::any_completion_handler<Signature> h) {
  rw_protocol::start_acquire(side, std::move(core), std::move(a), std::move(h));
}

template <class Signature>
void lock_acquire_of(std::shared_ptr<sync::client_core> core, acquire_args a, asio::any_completion_handler<Signature> h) {
  start_acquire(std::move(core), std::move(a), std::move(h));
}

template <class Signature>
void fair_acquire(std::shared_ptr<sync::client_core> core, acquire_args a, asio::any_completion_handler<Signature> h) {
  fair_protocol::start_acquire(std::move(core), std::move(a), std::move(h));
}

// In lock_kind's order: facts_of indexes it.
constexpr std::array<kind_facts, 4> kinds{{
    {.kind = lock_kind::reentrant,
     .counted_as = primitive::lock,
     .channel_of = channel_of,
     .field_of = owner_itself,
     .release_script = &scripts::lock_calls,
     .hands_over = true,
     .called_in_turn = false,
     .own_token = true,
     .multi_operation = "lock",
     .multi_key_of = lock_itself,
     .acquire = lock_acquire_of<acquire_signature>,
     .try_acquire = lock_acquire_of<try_acquire_signature>,
     .undo_args = lock_undo},
    {.kind = lock_kind::fair,
     .counted_as = primitive::fair_lock,
     .channel_of = channel_of,
     .field_of = owner_itself,
     .release_script = &scripts::fair_calls,
     .hands_over = true,
     .called_in_turn = true,
     .own_token = true,
     .multi_operation = "fair",
     .multi_key_of = fair_protocol::queue_key_of,
     .acquire = fair_acquire<acquire_signature>,
     .try_acquire = fair_acquire<try_acquire_signature>,
     .undo_args = fair_undo},
    {.kind = lock_kind::read,
     .counted_as = primitive::read_lock,
     .channel_of = rw_protocol::channel_of,
     .field_of = owner_itself,
     .release_script = &scripts::rw_calls,
     .hands_over = false,
     .called_in_turn = false,
     .own_token = false,
     .multi_operation = {},
     .multi_key_of = lock_itself,
     .acquire = rw_acquire<lock_kind::read, acquire_signature>,
     .try_acquire = rw_acquire<lock_kind::read, try_acquire_signature>,
     .undo_args = rw_undo<lock_kind::read>},
    {.kind = lock_kind::write,
     .counted_as = primitive::write_lock,
     .channel_of = rw_protocol::channel_of,
     .field_of = write_field,
     .release_script = &scripts::rw_calls,
     .hands_over = false,
     .called_in_turn = false,
     .own_token = true,
     .multi_operation = "write",
     .multi_key_of = rw_protocol::marks_key_of,
     .acquire = rw_acquire<lock_kind::write, acquire_signature>,
     .try_acquire = rw_acquire<lock_kind::write, try_acquire_signature>,
     .undo_args = rw_undo<lock_kind::write>},
}};
static_assert(kinds[0].kind == lock_kind::reentrant && kinds[1].kind == lock_kind::fair &&
              kinds[2].kind == lock_kind::read && kinds[3].kind == lock_kind::write);

}  // namespace

kind_facts const& facts_of(lock_kind kind) { return kinds[static_cast<std::size_t>(kind)]; }

}  // namespace redisync::detail::lock_protocol
