#pragma once

// A held lock level: the value acquire() completes with. It carries the fencing token, the
// validity deadline and the loss signal. Releasing it twice, or after the lease was lost, is an
// error. Destroying it while it still holds schedules an asynchronous release.

#include <redisync/error.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace redisync {

namespace detail {
struct held_access;
namespace sync {
class client_core;
struct hold_state;
struct hold_level;
struct loss_notifier;
}  // namespace sync
}  // namespace detail

// Every hold ends exactly once: released (the server confirmed it) or lost (reported).
enum class hold_status : std::uint8_t {
  held,       // renewed (or within its fixed lease)
  uncertain,  // renewals are failing, or a release is not confirmed yet; inside the deadline
  lost,       // the deadline passed, the owner field vanished, or the client stopped
  released,   // the server confirmed the release of this level
};

class held {
 public:
  held() = default;
  held(held&& other) noexcept;
  held& operator=(held&& other) noexcept;
  held(held const&) = delete;
  held& operator=(held const&) = delete;
  ~held();

  // Fencing token of this hold: strictly greater than every earlier hold of the lock's name; a
  // reentrant acquire gets the same token as the hold it nests in.
  std::uint64_t token() const noexcept { return token_; }
  // Until when no other owner can hold the lock (steady clock; extended by the watchdog).
  std::chrono::steady_clock::time_point valid_until() const noexcept;
  // Never `held` past valid_until(), whether or not the client runs.
  hold_status status() const noexcept;
  // This level was not let go of (released, or being released) and the hold is not lost.
  bool is_held() const noexcept;
  explicit operator bool() const noexcept { return is_held(); }
  std::string const& name() const noexcept;
  std::string const& owner_id() const noexcept;

  // Releases this hold level. error::not_held after an earlier release of this level (through
  // this guard or the lock handle) or for a guard made by default or moved from,
  // error::lease_lost if the lease was lost before. Nothing throws from the call. If the server
  // refuses the release, the error says why; the hold's renewal has stopped (unless another level
  // is held) and the client retries the release in the background until it goes through or the
  // lease ends: status() is `uncertain` meanwhile, then `released` or `lost`.
  template <class Token = boost::asio::deferred_t>
  auto release(Token&& token = {}) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
        [core = core_, state = state_, level = level_](auto handler) {
          start_release(core, state, level,
                        boost::asio::any_completion_handler<void(boost::system::error_code)>{std::move(handler)});
        },
        token);
  }

  // Completes when the hold ends, without an error, saying how: hold_status::lost, or released
  // (its last level); at once if it has ended. Only a cancellation (terminal, partial or total)
  // is an error, operation_aborted. So it composes: in `co_await (work() || h.wait_lost(use_awaitable))`
  // the loss cancels `work`.
  using wait_lost_signature = void(boost::system::error_code, hold_status);
  template <class Token = boost::asio::deferred_t>
  auto wait_lost(Token&& token = {}) {
    return boost::asio::async_initiate<Token, wait_lost_signature>(
        [core = core_, state = state_](auto handler) {
          start_wait_lost(core, {state}, boost::asio::any_completion_handler<wait_lost_signature>{std::move(handler)});
        },
        token);
  }

  // A slot that receives terminal cancellation when the hold is lost, emitted on `ex` (the
  // executor of the code bound to the slot). Bind an operation or a coroutine to it to stop work
  // that must not continue without the lock. Taken after the loss (or from a guard that holds
  // nothing), it emits once, posted to `ex`: bind the work in the same step, on `ex`, since a
  // cancellation signal keeps no memory. The guard owns the slot's signal: like any
  // cancellation_signal, it must outlive the work bound to it, so keep the guard (released or
  // not) until that work has ended.
  boost::asio::cancellation_slot loss_slot(boost::asio::any_io_executor ex);

 private:
  friend struct detail::held_access;
  friend class multi_held;
  using core_ptr = std::shared_ptr<detail::sync::client_core>;
  using state_ptr = std::shared_ptr<detail::sync::hold_state>;
  using level_ptr = std::shared_ptr<detail::sync::hold_level>;
  held(core_ptr core, state_ptr state, level_ptr level, std::uint64_t token);

  // The operations keep what they need: a deferred operation may outlive this guard.
  static void start_release(core_ptr const& core, state_ptr const& state, level_ptr const& level,
                            boost::asio::any_completion_handler<void(boost::system::error_code)> h);
  // Completes when the first of `states` (holds of one client) ends.
  static void start_wait_lost(core_ptr const& core, std::vector<state_ptr> states,
                              boost::asio::any_completion_handler<wait_lost_signature> h);

  core_ptr core_;
  state_ptr state_;
  level_ptr level_;
  std::shared_ptr<detail::sync::loss_notifier> notifier_;
  std::uint64_t token_ = 0;
};

}  // namespace redisync
