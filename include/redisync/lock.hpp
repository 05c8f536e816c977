#pragma once

// A handle on a reentrant distributed lock: a name and an owner. Cheap to make, no I/O. Handles
// with the same owner and name re-enter; different owners exclude each other, in this process or
// any other, Redisson clients included. An operation keeps what it needs: a deferred operation may
// outlive the handle it was made from. A handle moved from (or made from an owner moved from)
// completes every operation with error::empty_handle.

#include <redisync/held.hpp>
#include <redisync/lock_kind.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace redisync {

class owner;

// An owner holds one lock at most this many levels deep (each kind and side counts apart): one
// acquire more fails with error::too_deep and changes nothing.
inline constexpr std::int64_t max_hold_depth = 1000;

// The shortest lease (of an acquire, or config::watchdog_lease): a hold ends 1% + 2 ms before its
// lease for clock drift, so a shorter one would be lost before its reply came. The longest is a
// year (365 days); waits are bounded by a year too.
inline constexpr std::chrono::milliseconds shortest_lease{10};

class lock {
 public:
  using acquire_signature = void(boost::system::error_code, held);
  using try_acquire_signature = void(boost::system::error_code, std::optional<held>);

  std::string const& name() const noexcept { return name_; }
  std::string const& owner_id() const noexcept { return owner_; }
  // The client's executor: where operations complete whose handler names no executor of its own.
  boost::asio::any_io_executor get_executor() const;

  // Waits until held. The lease is the client's watchdog lease, renewed every third of it until
  // released or lost.
  template <boost::asio::completion_token_for<acquire_signature> Token = boost::asio::deferred_t>
  auto acquire(Token&& token = {}) {
    return initiate<acquire_signature>(std::nullopt, std::nullopt, std::forward<Token>(token));
  }

  // Waits until held, with a fixed lease and no watchdog: the hold is lost when the lease ends.
  template <boost::asio::completion_token_for<acquire_signature> Token = boost::asio::deferred_t>
  auto acquire(std::chrono::milliseconds lease, Token&& token = {}) {
    return initiate<acquire_signature>(lease, std::nullopt, std::forward<Token>(token));
  }

  // Waits at most `wait` (zero: one attempt); completes with an empty optional if not held by then.
  template <boost::asio::completion_token_for<try_acquire_signature> Token = boost::asio::deferred_t>
  auto try_acquire(std::chrono::milliseconds wait, Token&& token = {}) {
    return initiate<try_acquire_signature>(std::nullopt, wait, std::forward<Token>(token));
  }

  template <boost::asio::completion_token_for<try_acquire_signature> Token = boost::asio::deferred_t>
  auto try_acquire(std::chrono::milliseconds wait, std::chrono::milliseconds lease, Token&& token = {}) {
    return initiate<try_acquire_signature>(lease, wait, std::forward<Token>(token));
  }

  // Releases one hold level of this owner. error::not_owner if the owner holds nothing.
  template <class Token = boost::asio::deferred_t>
  auto release(Token&& token = {}) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
        [core = core_, owner = owner_, name = name_, kind = kind_](auto h) {
          start_release(core, owner, name, kind,
                        boost::asio::any_completion_handler<void(boost::system::error_code)>{std::move(h)});
        },
        token);
  }

  // Deletes the lock whoever holds it; completes with true if it was held.
  template <class Token = boost::asio::deferred_t>
  auto force_release(Token&& token = {}) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, bool)>(
        [core = core_, name = name_, kind = kind_](auto h) {
          start_force_release(core, name, kind,
                              boost::asio::any_completion_handler<void(boost::system::error_code, bool)>{std::move(h)});
        },
        token);
  }

  // Whether any owner holds the lock.
  template <class Token = boost::asio::deferred_t>
  auto is_locked(Token&& token = {}) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, bool)>(
        [core = core_, name = name_](auto h) {
          start_is_locked(core, name,
                          boost::asio::any_completion_handler<void(boost::system::error_code, bool)>{std::move(h)});
        },
        token);
  }

  // How many times this owner holds the lock (0 if not).
  template <class Token = boost::asio::deferred_t>
  auto hold_count(Token&& token = {}) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::int64_t)>(
        [core = core_, owner = owner_, name = name_, kind = kind_](auto h) {
          start_hold_count(core, owner, name, kind,
                           boost::asio::any_completion_handler<void(boost::system::error_code, std::int64_t)>{
                               std::move(h)});
        },
        token);
  }

  // The lock's remaining time to live; std::nullopt when nobody holds it.
  template <class Token = boost::asio::deferred_t>
  auto remaining_lease(Token&& token = {}) {
    using signature = void(boost::system::error_code, std::optional<std::chrono::milliseconds>);
    return boost::asio::async_initiate<Token, signature>(
        [core = core_, name = name_](auto h) {
          start_remaining_lease(core, name, boost::asio::any_completion_handler<signature>{std::move(h)});
        },
        token);
  }

  // What this handle locks: a reentrant lock, a fair lock (fair_lock.hpp), or a side of a
  // read-write lock (read_write_lock.hpp).
  lock_kind kind() const noexcept { return kind_; }
  bool fair() const noexcept { return kind_ == lock_kind::fair; }

  // The same lock, whose acquires wait by polling (1 ms doubling to 128 ms, with jitter) instead of
  // listening on the lock's channel: for deployments whose ACLs deny channels (Redisson's
  // RSpinLock). It excludes everyone all the same; only its waits are slower to notice a release
  // by another client (this client's own releases still hand it the lock at once).
  lock spinning() const {
    lock l = *this;
    l.spin_ = true;
    return l;
  }
  bool spins() const noexcept { return spin_; }

 protected:
  using core_ptr = std::shared_ptr<detail::sync::client_core>;
  lock(core_ptr core, std::string owner_id, std::string name, lock_kind kind)
      : core_{std::move(core)}, owner_{std::move(owner_id)}, name_{std::move(name)}, kind_{kind} {}

 private:
  friend class owner;
  friend class read_write_lock;
  friend class multi_lock;
  using duration = std::optional<std::chrono::milliseconds>;

  template <class Signature, class Token>
  auto initiate(duration lease, duration wait, Token&& token) const {
    return boost::asio::async_initiate<Token, Signature>(
        [core = core_, owner = owner_, name = name_, lease, wait, kind = kind_, spin = spin_,
         counted = counted_](auto h) mutable {
          start_acquire(core, std::move(owner), std::move(name), lease, wait, kind, spin, counted,
                        boost::asio::any_completion_handler<Signature>{std::move(h)});
        },
        token);
  }

  static void start_acquire(core_ptr const& core, std::string owner, std::string name, duration lease, duration wait,
                            lock_kind kind, bool spin, bool counted,
                            boost::asio::any_completion_handler<acquire_signature> h);
  static void start_acquire(core_ptr const& core, std::string owner, std::string name, duration lease, duration wait,
                            lock_kind kind, bool spin, bool counted,
                            boost::asio::any_completion_handler<try_acquire_signature> h);
  static void start_release(core_ptr const& core, std::string const& owner, std::string const& name, lock_kind kind,
                            boost::asio::any_completion_handler<void(boost::system::error_code)> h);
  static void start_force_release(core_ptr const& core, std::string const& name, lock_kind kind,
                                  boost::asio::any_completion_handler<void(boost::system::error_code, bool)> h);
  static void start_is_locked(core_ptr const& core, std::string const& name,
                              boost::asio::any_completion_handler<void(boost::system::error_code, bool)> h);
  static void start_hold_count(core_ptr const& core, std::string const& owner, std::string const& name, lock_kind kind,
                               boost::asio::any_completion_handler<void(boost::system::error_code, std::int64_t)> h);
  static void start_remaining_lease(
      core_ptr const& core, std::string const& name,
      boost::asio::any_completion_handler<void(boost::system::error_code, std::optional<std::chrono::milliseconds>)> h);

  core_ptr core_;
  std::string owner_;
  std::string name_;
  lock_kind kind_ = lock_kind::reentrant;
  bool spin_ = false;
  bool counted_ = true;  // false for a multi-lock's member: the multi-lock counts its acquire
};

}  // namespace redisync
