#pragma once

// A handle on a semaphore of leased permits: `n` permits in all, shared by every process (set them
// once with try_set_permits). Each acquire takes `k` permits as one hold (held): with a lease
// renewed by the watchdog, a fencing token, and the statuses of a lock's hold, so a holder that
// dies gives its permits back within its lease, judged by Redis's clock, and one that pauses past
// its lease is told `lost`. Releasing the guard gives the k permits back; its owner_id() is the
// permit's id (`<owner id>:p<n>`, as inspect shows it). Cheap to make, no I/O.
// The layout is redisync's own (a Redisson RSemaphore on the same name is semaphore.hpp). Fair
// permits (owner::fair_permits) serve waiters in the order they first asked, across processes.

#include <redisync/held.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace redisync {

class permits {
 public:
  using acquire_signature = void(boost::system::error_code, held);
  using try_acquire_signature = void(boost::system::error_code, std::optional<held>);
  using count_signature = void(boost::system::error_code, std::int64_t);

  std::string const& name() const noexcept { return name_; }
  std::string const& owner_id() const noexcept { return owner_; }
  bool fair() const noexcept { return fair_; }
  boost::asio::any_io_executor get_executor() const;

  // Waits until `k` permits are free and takes them, with the watchdog's lease. error::too_many_permits
  // if the semaphore has fewer than `k` in all; error::invalid_argument for k < 1.
  template <boost::asio::completion_token_for<acquire_signature> Token = boost::asio::deferred_t>
  auto acquire(std::int64_t k, Token&& token = {}) const {
    return initiate<acquire_signature>(k, std::nullopt, std::nullopt, std::forward<Token>(token));
  }
  // The same with a fixed lease and no watchdog.
  template <boost::asio::completion_token_for<acquire_signature> Token = boost::asio::deferred_t>
  auto acquire(std::int64_t k, std::chrono::milliseconds lease, Token&& token = {}) const {
    return initiate<acquire_signature>(k, lease, std::nullopt, std::forward<Token>(token));
  }
  // Waits at most `wait` (zero: one attempt); an empty optional if the permits were not free by then.
  template <boost::asio::completion_token_for<try_acquire_signature> Token = boost::asio::deferred_t>
  auto try_acquire(std::int64_t k, std::chrono::milliseconds wait, Token&& token = {}) const {
    return initiate<try_acquire_signature>(k, std::nullopt, wait, std::forward<Token>(token));
  }
  template <boost::asio::completion_token_for<try_acquire_signature> Token = boost::asio::deferred_t>
  auto try_acquire(std::int64_t k, std::chrono::milliseconds wait, std::chrono::milliseconds lease,
                   Token&& token = {}) const {
    return initiate<try_acquire_signature>(k, lease, wait, std::forward<Token>(token));
  }

  // Sets the number of permits in all if it was not set yet; completes with whether it set it.
  template <boost::asio::completion_token_for<void(boost::system::error_code, bool)> Token = boost::asio::deferred_t>
  auto try_set_permits(std::int64_t n, Token&& token = {}) const {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, bool)>(
        [core = core_, name = name_, n](auto h) {
          start_try_set(core, name, n, boost::asio::any_completion_handler<void(boost::system::error_code, bool)>{std::move(h)});
        },
        token);
  }
  // Adds `delta` permits to the number in all (a negative delta takes some away; below zero:
  // error::too_many_permits); completes with the new number. Holds are not touched.
  template <boost::asio::completion_token_for<count_signature> Token = boost::asio::deferred_t>
  auto add_permits(std::int64_t delta, Token&& token = {}) const {
    return initiate_count("add", delta, std::forward<Token>(token));
  }
  // The permits free now (the permits of holders whose lease ended are free).
  template <boost::asio::completion_token_for<count_signature> Token = boost::asio::deferred_t>
  auto available_permits(Token&& token = {}) const {
    return initiate_count("available", 0, std::forward<Token>(token));
  }

 private:
  friend class owner;
  using core_ptr = std::shared_ptr<detail::sync::client_core>;
  using duration = std::optional<std::chrono::milliseconds>;
  permits(core_ptr core, std::string owner_id, std::string name, bool fair)
      : core_{std::move(core)}, owner_{std::move(owner_id)}, name_{std::move(name)}, fair_{fair} {}

  template <class Signature, class Token>
  auto initiate(std::int64_t k, duration lease, duration wait, Token&& token) const {
    return boost::asio::async_initiate<Token, Signature>(
        [core = core_, owner = owner_, name = name_, k, lease, wait, fair = fair_](auto h) mutable {
          start_acquire(core, owner, std::move(name), k, lease, wait, fair,
                        boost::asio::any_completion_handler<Signature>{std::move(h)});
        },
        token);
  }
  template <class Token>
  auto initiate_count(char const* op, std::int64_t n, Token&& token) const {
    return boost::asio::async_initiate<Token, count_signature>(
        [core = core_, name = name_, op, n](auto h) {
          start_count(core, name, op, n, boost::asio::any_completion_handler<count_signature>{std::move(h)});
        },
        token);
  }

  static void start_acquire(core_ptr const& core, std::string const& owner, std::string name, std::int64_t k,
                            duration lease, duration wait, bool fair,
                            boost::asio::any_completion_handler<acquire_signature> h);
  static void start_acquire(core_ptr const& core, std::string const& owner, std::string name, std::int64_t k,
                            duration lease, duration wait, bool fair,
                            boost::asio::any_completion_handler<try_acquire_signature> h);
  static void start_try_set(core_ptr const& core, std::string const& name, std::int64_t n,
                            boost::asio::any_completion_handler<void(boost::system::error_code, bool)> h);
  static void start_count(core_ptr const& core, std::string const& name, char const* op, std::int64_t n,
                          boost::asio::any_completion_handler<count_signature> h);

  core_ptr core_;
  std::string owner_;
  std::string name_;
  bool fair_ = false;
};

}  // namespace redisync
