#include <redisync/lock.hpp>

#include "primitives/fair_lock/acquire.hpp"
#include "primitives/lock/acquire.hpp"
#include "primitives/lock/queries.hpp"
#include "primitives/lock/release.hpp"
#include "sync/client_core.hpp"
#include "sync/launch.hpp"

namespace redisync {

namespace asio = boost::asio;
namespace proto = detail::lock_protocol;
using boost::system::error_code;

asio::any_io_executor lock::get_executor() const { return core_->strand(); }

namespace {

template <class Signature>
void start(std::shared_ptr<detail::sync::client_core> const& core, proto::acquire_args a, bool fair,
           asio::any_completion_handler<Signature> h) {
  if (fair) return detail::fair_protocol::start_acquire(core, std::move(a), std::move(h));
  proto::start_acquire(core, std::move(a), std::move(h));
}

}  // namespace

void lock::start_acquire(core_ptr const& core, std::string owner, std::string name, duration lease, duration wait,
                         bool fair, asio::any_completion_handler<acquire_signature> h) {
  start(core, {std::move(name), std::move(owner), lease, wait}, fair, std::move(h));
}

void lock::start_acquire(core_ptr const& core, std::string owner, std::string name, duration lease, duration wait,
                         bool fair, asio::any_completion_handler<try_acquire_signature> h) {
  start(core, {std::move(name), std::move(owner), lease, wait}, fair, std::move(h));
}

void lock::start_release(core_ptr const& core, std::string const& owner, std::string const& name, bool fair,
                         asio::any_completion_handler<void(error_code)> h) {
  proto::start_release(core, name, owner, nullptr, nullptr, std::move(h), fair);
}

void lock::start_force_release(core_ptr const& core, std::string const& name,
                               asio::any_completion_handler<void(error_code, bool)> h) {
  detail::sync::launch(core->strand(), core->completion_executor(), proto::force_release(core, name), std::move(h),
                       false);
}

void lock::start_is_locked(core_ptr const& core, std::string const& name,
                           asio::any_completion_handler<void(error_code, bool)> h) {
  detail::sync::launch(core->strand(), core->completion_executor(), proto::is_locked(core, name), std::move(h), true);
}

void lock::start_hold_count(core_ptr const& core, std::string const& owner, std::string const& name,
                            asio::any_completion_handler<void(error_code, std::int64_t)> h) {
  detail::sync::launch(core->strand(), core->completion_executor(), proto::hold_count(core, name, owner),
                       std::move(h), true);
}

void lock::start_remaining_lease(
    core_ptr const& core, std::string const& name,
    asio::any_completion_handler<void(error_code, std::optional<std::chrono::milliseconds>)> h) {
  detail::sync::launch(core->strand(), core->completion_executor(), proto::remaining_lease(core, name), std::move(h),
                       true);
}

}  // namespace redisync
