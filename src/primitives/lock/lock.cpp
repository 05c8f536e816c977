#include <redisync/lock.hpp>

#include "primitives/fair_lock/acquire.hpp"
#include "primitives/lock/acquire.hpp"
#include "primitives/lock/queries.hpp"
#include "primitives/lock/release.hpp"
#include "primitives/lock/replicas.hpp"
#include "primitives/rw_lock/acquire.hpp"
#include "primitives/rw_lock/protocol.hpp"
#include "sync/client_core.hpp"
#include "sync/launch.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace redisync {

namespace asio = boost::asio;
namespace proto = detail::lock_protocol;
using boost::system::error_code;

asio::any_io_executor lock::get_executor() const {
  return core_ ? core_->application_executor() : asio::any_io_executor{asio::system_executor{}};
}

namespace {

using detail::rw_protocol::field_of;  // a write side's hash field; any other lock's is the owner

bool is_read_write(lock_kind kind) { return kind == lock_kind::read || kind == lock_kind::write; }

held* hold_in(held& h) { return &h; }
held* hold_in(std::optional<held>& h) { return h ? &*h : nullptr; }

// config::wait_replicas: too few acknowledgements release the hold and fail the acquire: a hold is
// never left behind an error.
template <class T>
asio::awaitable<std::tuple<error_code, T>> confirm_replicated(std::shared_ptr<detail::sync::client_core> core,
                                                              std::string name, T result) {
  auto const ec = co_await proto::confirm_replicas(*core, core->router().slot_of(name), name);
  if (!ec) co_return std::tuple{error_code{}, std::move(result)};
  co_await hold_in(result)->release(asio::as_tuple(asio::use_awaitable));
  co_return std::tuple{ec, T{}};
}

// The caller's handler, behind a WAIT when the configuration asks for one.
template <class... Args>
asio::any_completion_handler<void(error_code, Args...)> replicated(
    std::shared_ptr<detail::sync::client_core> const& core, std::string const& name,
    asio::any_completion_handler<void(error_code, Args...)> h) {
  if (core->cfg().wait_replicas == 0) return h;
  auto slot = h.get_cancellation_slot();
  auto ex = asio::get_associated_executor(h, core->application_executor());
  auto confirm = [core, name, h = std::move(h)](error_code ec, Args... result) mutable {
    if (ec || hold_in(result...) == nullptr) return std::move(h)(ec, std::move(result)...);
    detail::sync::launch(core->strand(), core->homes(), confirm_replicated(core, name, std::move(result)...),
                         std::move(h), false);
  };
  return asio::bind_executor(std::move(ex), asio::bind_cancellation_slot(slot, std::move(confirm)));
}

template <class Signature>
void start(std::shared_ptr<detail::sync::client_core> const& core, proto::acquire_args a, lock_kind kind,
           asio::any_completion_handler<Signature> caller) {
  // Made, not assigned: Asio 1.26's any_completion_handler move assignment recurses without end.
  asio::any_completion_handler<Signature> h = replicated(core, a.name, std::move(caller));
  switch (kind) {
    case lock_kind::reentrant: return proto::start_acquire(core, std::move(a), std::move(h));
    case lock_kind::fair: return detail::fair_protocol::start_acquire(core, std::move(a), std::move(h));
    case lock_kind::read:
    case lock_kind::write:
      a.owner = field_of(kind, a.owner);
      return detail::rw_protocol::start_acquire(kind, core, std::move(a), std::move(h));
  }
}

}  // namespace

void lock::start_acquire(core_ptr const& core, std::string owner, std::string name, duration lease, duration wait,
                         lock_kind kind, bool spin, asio::any_completion_handler<acquire_signature> h) {
  if (!core) return detail::sync::fail_at_once(std::move(h), error::empty_handle);
  start(core, {std::move(name), std::move(owner), lease, wait, spin}, kind, std::move(h));
}

void lock::start_acquire(core_ptr const& core, std::string owner, std::string name, duration lease, duration wait,
                         lock_kind kind, bool spin, asio::any_completion_handler<try_acquire_signature> h) {
  if (!core) return detail::sync::fail_at_once(std::move(h), error::empty_handle);
  start(core, {std::move(name), std::move(owner), lease, wait, spin}, kind, std::move(h));
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
                       proto::force_release(core, name, is_read_write(kind)), std::move(h), false);
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
