#include <redisync/lock.hpp>

#include "lock/client_core.hpp"

namespace redisync {

namespace asio = boost::asio;
using boost::system::error_code;

lock::lock(std::shared_ptr<detail::client_core> core, std::string owner_id, std::string name)
    : core_{std::move(core)}, owner_{std::move(owner_id)}, name_{std::move(name)} {}

void lock::start_acquire(std::optional<std::chrono::milliseconds> lease,
                         std::optional<std::chrono::milliseconds> wait,
                         asio::any_completion_handler<acquire_signature> h) {
  core_->start_acquire({name_, owner_, lease, wait}, std::move(h));
}

void lock::start_acquire(std::optional<std::chrono::milliseconds> lease,
                         std::optional<std::chrono::milliseconds> wait,
                         asio::any_completion_handler<try_acquire_signature> h) {
  core_->start_acquire({name_, owner_, lease, wait}, std::move(h));
}

void lock::start_release(asio::any_completion_handler<void(error_code)> h) {
  core_->start_release(name_, owner_, nullptr, nullptr, std::move(h));
}

void lock::start_force_release(asio::any_completion_handler<void(error_code, bool)> h) {
  core_->launch(core_->force_release(name_), std::move(h), false);
}

void lock::start_is_locked(asio::any_completion_handler<void(error_code, bool)> h) {
  core_->launch(core_->is_locked(name_), std::move(h), true);
}

void lock::start_hold_count(asio::any_completion_handler<void(error_code, std::int64_t)> h) {
  core_->launch(core_->hold_count(name_, owner_), std::move(h), true);
}

void lock::start_remaining_lease(
    asio::any_completion_handler<void(error_code, std::optional<std::chrono::milliseconds>)> h) {
  core_->launch(core_->remaining_lease(name_), std::move(h), true);
}

}  // namespace redisync
