#pragma once

// A handle on a Redisson RSemaphore: the string `name` holds the permits free, shared with Redisson
// clients (each side takes, gives back and wakes the other's waiters). Permits have no holder on
// the server, so those of a process that dies are gone (Redisson's #2045); leased permits that come
// back by themselves are permits.hpp. This client counts what each owner took, and an owner gives
// back no more than that (error::not_owner); add_permits adds without that check. Cheap to make.

#include <redisync/held.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace redisync {

class semaphore {
 public:
  using acquire_signature = void(boost::system::error_code);
  using try_acquire_signature = void(boost::system::error_code, bool);
  using count_signature = void(boost::system::error_code, std::int64_t);

  std::string const& name() const noexcept { return name_; }
  std::string const& owner_id() const noexcept { return owner_; }
  boost::asio::any_io_executor get_executor() const;

  // Waits until `k` permits are free and takes them (error::invalid_argument for k < 1).
  template <boost::asio::completion_token_for<acquire_signature> Token = boost::asio::deferred_t>
  auto acquire(std::int64_t k, Token&& token = {}) const {
    return initiate<acquire_signature>(k, std::nullopt, std::forward<Token>(token));
  }
  // Waits at most `wait` (zero: one attempt); completes with whether it took them.
  template <boost::asio::completion_token_for<try_acquire_signature> Token = boost::asio::deferred_t>
  auto try_acquire(std::int64_t k, std::chrono::milliseconds wait, Token&& token = {}) const {
    return initiate<try_acquire_signature>(k, wait, std::forward<Token>(token));
  }
  // Gives back `k` permits this owner took through this client (error::not_owner beyond them).
  template <boost::asio::completion_token_for<void(boost::system::error_code)> Token = boost::asio::deferred_t>
  auto release(std::int64_t k, Token&& token = {}) const {
    return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
        [core = core_, owner = owner_, name = name_, k](auto h) {
          start_release(core, owner, name, k, boost::asio::any_completion_handler<void(boost::system::error_code)>{std::move(h)});
        },
        token);
  }
  // Sets the permits free if the semaphore has no count yet; completes with whether it set it.
  template <boost::asio::completion_token_for<void(boost::system::error_code, bool)> Token = boost::asio::deferred_t>
  auto try_set_permits(std::int64_t n, Token&& token = {}) const {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, bool)>(
        [core = core_, name = name_, n](auto h) {
          start_try_set(core, name, n, boost::asio::any_completion_handler<void(boost::system::error_code, bool)>{std::move(h)});
        },
        token);
  }
  // Adds `delta` permits (negative: takes some away, Redisson's reducePermits); completes with the
  // count free after.
  template <boost::asio::completion_token_for<count_signature> Token = boost::asio::deferred_t>
  auto add_permits(std::int64_t delta, Token&& token = {}) const {
    return initiate_count("add", delta, std::forward<Token>(token));
  }
  template <boost::asio::completion_token_for<count_signature> Token = boost::asio::deferred_t>
  auto available_permits(Token&& token = {}) const {
    return initiate_count("available", 0, std::forward<Token>(token));
  }
  // Takes every permit free for this owner (which may give them back); completes with how many.
  template <boost::asio::completion_token_for<count_signature> Token = boost::asio::deferred_t>
  auto drain_permits(Token&& token = {}) const {
    return initiate_count("drain", 0, std::forward<Token>(token));
  }

 private:
  friend class owner;
  using core_ptr = std::shared_ptr<detail::sync::client_core>;
  semaphore(core_ptr core, std::string owner_id, std::string name)
      : core_{std::move(core)}, owner_{std::move(owner_id)}, name_{std::move(name)} {}

  template <class Signature, class Token>
  auto initiate(std::int64_t k, std::optional<std::chrono::milliseconds> wait, Token&& token) const {
    return boost::asio::async_initiate<Token, Signature>(
        [core = core_, owner = owner_, name = name_, k, wait](auto h) mutable {
          start_acquire(core, std::move(owner), std::move(name), k, wait,
                        boost::asio::any_completion_handler<Signature>{std::move(h)});
        },
        token);
  }
  template <class Token>
  auto initiate_count(char const* op, std::int64_t n, Token&& token) const {
    return boost::asio::async_initiate<Token, count_signature>(
        [core = core_, owner = owner_, name = name_, op, n](auto h) {
          start_count(core, owner, name, op, n, boost::asio::any_completion_handler<count_signature>{std::move(h)});
        },
        token);
  }

  static void start_acquire(core_ptr const& core, std::string owner, std::string name, std::int64_t k,
                            std::optional<std::chrono::milliseconds> wait,
                            boost::asio::any_completion_handler<acquire_signature> h);
  static void start_acquire(core_ptr const& core, std::string owner, std::string name, std::int64_t k,
                            std::optional<std::chrono::milliseconds> wait,
                            boost::asio::any_completion_handler<try_acquire_signature> h);
  static void start_release(core_ptr const& core, std::string const& owner, std::string const& name, std::int64_t k,
                            boost::asio::any_completion_handler<void(boost::system::error_code)> h);
  static void start_try_set(core_ptr const& core, std::string const& name, std::int64_t n,
                            boost::asio::any_completion_handler<void(boost::system::error_code, bool)> h);
  static void start_count(core_ptr const& core, std::string const& owner, std::string const& name, char const* op,
                          std::int64_t n, boost::asio::any_completion_handler<count_signature> h);

  core_ptr core_;
  std::string owner_;
  std::string name_;
};

}  // namespace redisync
