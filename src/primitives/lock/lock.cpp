#include <redisync/lock.hpp>

#include "primitives/lock_protocol/acquire.hpp"
#include "primitives/lock_protocol/kinds.hpp"
#include "primitives/lock_protocol/queries.hpp"
#include "primitives/lock_protocol/release.hpp"
#include "sync/client_core.hpp"
#include "sync/launch.hpp"
#include "sync/replicas.hpp"

#include <type_traits>

namespace redisync {

namespace asio = boost::asio;
namespace proto = detail::lock_protocol;
using boost::system::error_code;

asio::any_io_executor lock::get_executor() const {
  return core_ ? core_->application_executor() : asio::any_io_executor{asio::system_executor{}};
}

namespace {

std::string field_of(lock_kind kind, std::string_view owner) { return proto::facts_of(kind).field_of(owner); }

template <class Signature>
void start(std::shared_ptr<detail::sync::client_core> const& core, proto::acquire_args a, lock_kind kind,
           asio::any_completion_handler<Signature> caller) {
  // Made, not assigned: Asio 1.26's any_completion_handler move assignment recurses without end.
  asio::any_completion_handler<Signature> h = detail::sync::replicated_hold(core, a.name, std::move(caller));
  auto const& facts = proto::facts_of(kind);
  a.owner = facts.field_of(a.owner);
  if constexpr (std::is_same_v<Signature, proto::acquire_signature>) {
    facts.acquire(core, std::move(a), std::move(h));
  } else {
    facts.try_acquire(core, std::move(a), std::move(h));
  }
}

}  // namespace

void lock::start_acquire(core_ptr const& core, std::string owner, std::string name, duration lease, duration wait,
                         lock_kind kind, bool spin, bool counted, asio::any_completion_handler<acquire_signature> h) {
  if (!core) return detail::sync::fail_at_once(std::move(h), error::empty_handle);
  start(core, {std::move(name), std::move(owner), lease, wait, spin, counted}, kind, std::move(h));
}

void lock::start_acquire(core_ptr const& core, std::string owner, std::string name, duration lease, duration wait,
                         lock_kind kind, bool spin, bool counted,
                         asio::any_completion_handler<try_acquire_signature> h) {
  if (!core) return detail::sync::fail_at_once(std::move(h), error::empty_handle);
  start(core, {std::move(name), std::move(owner), lease, wait, spin, counted}, kind, std::move(h));
}

void lock::start_release(core_ptr const& core, std::string const& owner, std::string const& name, lock_kind kind,
                         asio::any_completion_handler<void(error_code)> h) {
  if (!core) return detail::sync::fail_at_once(std::move(h), error::empty_handle);
  proto::start_release(core, name, field_of(kind, owner), nullptr, nullptr, std::move(h), kind);
}

void lock::start_force_release(core_ptr const& core, std::string const& name, lock_kind kind,
                               asio::any_completion_handler<void(error_code, bool)> h) {
  if (!core) return detail::sync::fail_at_once(std::move(h), error::empty_handle);
  detail::sync::launch(core->strand(), core->homes(),
                       proto::force_release(core, name, kind), std::move(h), false);
}

void lock::start_is_locked(core_ptr const& core, std::string const& name,
                           asio::any_completion_handler<void(error_code, bool)> h) {
  if (!core) return detail::sync::fail_at_once(std::move(h), error::empty_handle);
  detail::sync::launch(core->strand(), core->homes(), proto::is_locked(core, name), std::move(h), true);
}

void lock::start_hold_count(core_ptr const& core, std::string const& owner, std::string const& name, lock_kind kind,
                            asio::any_completion_handler<void(error_code, std::int64_t)> h) {
  if (!core) return detail::sync::fail_at_once(std::move(h), error::empty_handle);
  detail::sync::launch(core->strand(), core->homes(), proto::hold_count(core, name, field_of(kind, owner)),
                       std::move(h), true);
}

void lock::start_remaining_lease(
    core_ptr const& core, std::string const& name,
    asio::any_completion_handler<void(error_code, std::optional<std::chrono::milliseconds>)> h) {
  if (!core) return detail::sync::fail_at_once(std::move(h), error::empty_handle);
  detail::sync::launch(core->strand(), core->homes(), proto::remaining_lease(core, name), std::move(h),
                       true);
}

}  // namespace redisync
