#pragma once

// A handle on a Redisson RCountDownLatch: the string `name` holds the count, shared with Redisson
// clients (each side counts down and wakes the other's waiters). wait() completes when the count
// is 0 (a missing key counts as 0): a message on the latch's channel wakes every waiter of every
// client at once, and a waiter also looks again every config::wait_poll_cap, so that a lost
// message delays it by at most that. Cheap to make; made by client::latch.

#include <redisync/held.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace redisync {

class latch {
 public:
  using wait_signature = void(boost::system::error_code, bool);
  using count_signature = void(boost::system::error_code, std::int64_t);

  std::string const& name() const noexcept { return name_; }
  boost::asio::any_io_executor get_executor() const;

  // Sets the count (> 0) if the latch has none; completes with whether it set it.
  template <boost::asio::completion_token_for<void(boost::system::error_code, bool)> Token = boost::asio::deferred_t>
  auto try_set_count(std::int64_t count, Token&& token = {}) const {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, bool)>(
        [core = core_, name = name_, count](auto h) {
          start_try_set(core, name, count,
                        boost::asio::any_completion_handler<void(boost::system::error_code, bool)>{std::move(h)});
        },
        token);
  }
  // Counts down by one; completes with the count after (0 once open: counting down an open latch
  // changes nothing).
  template <boost::asio::completion_token_for<count_signature> Token = boost::asio::deferred_t>
  auto count_down(Token&& token = {}) const {
    return initiate_count("count-down", std::forward<Token>(token));
  }
  template <boost::asio::completion_token_for<count_signature> Token = boost::asio::deferred_t>
  auto count(Token&& token = {}) const {
    return initiate_count("count", std::forward<Token>(token));
  }
  // Waits at most `bound` until the count is 0 (zero: one look); completes with whether it is.
  template <boost::asio::completion_token_for<wait_signature> Token = boost::asio::deferred_t>
  auto wait(std::chrono::milliseconds bound, Token&& token = {}) const {
    return boost::asio::async_initiate<Token, wait_signature>(
        [core = core_, name = name_, bound](auto h) {
          start_wait(core, name, bound, boost::asio::any_completion_handler<wait_signature>{std::move(h)});
        },
        token);
  }

 private:
  friend class client;
  using core_ptr = std::shared_ptr<detail::sync::client_core>;
  latch(core_ptr core, std::string name) : core_{std::move(core)}, name_{std::move(name)} {}

  template <class Token>
  auto initiate_count(char const* op, Token&& token) const {
    return boost::asio::async_initiate<Token, count_signature>(
        [core = core_, name = name_, op](auto h) {
          start_count(core, name, op, boost::asio::any_completion_handler<count_signature>{std::move(h)});
        },
        token);
  }

  static void start_wait(core_ptr const& core, std::string const& name, std::chrono::milliseconds bound,
                         boost::asio::any_completion_handler<wait_signature> h);
  static void start_try_set(core_ptr const& core, std::string const& name, std::int64_t count,
                            boost::asio::any_completion_handler<void(boost::system::error_code, bool)> h);
  static void start_count(core_ptr const& core, std::string const& name, char const* op,
                          boost::asio::any_completion_handler<count_signature> h);

  core_ptr core_;
  std::string name_;
};

}  // namespace redisync
