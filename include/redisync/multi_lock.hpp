#pragma once

// A multi-lock: several locks of one owner (reentrant locks, fair locks, write sides of read-write
// locks, in any mix) taken as one hold. Members that share a cluster slot (on one server: all of
// them) are taken in one script call, all or none. When a member is busy, the multi-lock waits for
// it with that member's own acquire (a fair member in its queue) while it holds only members that
// come before it in one global order, the order of their names, which every multi-lock follows:
// two multi-locks that share names never deadlock, whatever order their callers listed them in.
// An acquire that fails, runs out of time or is cancelled, at any step, releases every member it
// took before it completes. Make one with owner::locks.

#include <redisync/lock.hpp>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/experimental/parallel_group.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

namespace redisync {

// The hold of a multi-lock: one guard per member, in the order the multi-lock was given them.
class multi_held {
 public:
  multi_held() = default;

  // The members' guards: each carries its member's fencing token, name and status.
  std::vector<held> const& members() const noexcept { return members_; }
  std::vector<std::uint64_t> tokens() const {
    std::vector<std::uint64_t> t;
    for (auto const& m : members_) t.push_back(m.token());
    return t;
  }
  // One status for all: lost if any member is lost, else uncertain if any is, else released once
  // every member is, else held.
  hold_status status() const noexcept {
    if (members_.empty()) return hold_status::released;
    bool uncertain = false;
    bool released = true;
    for (auto const& m : members_) {
      auto const s = m.status();
      if (s == hold_status::lost) return hold_status::lost;
      uncertain = uncertain || s == hold_status::uncertain;
      released = released && s == hold_status::released;
    }
    if (uncertain) return hold_status::uncertain;
    return released ? hold_status::released : hold_status::held;
  }
  // Every member is held (not let go of, not lost).
  bool is_held() const noexcept {
    return !members_.empty() && std::all_of(members_.begin(), members_.end(), [](held const& m) { return m.is_held(); });
  }
  explicit operator bool() const noexcept { return is_held(); }
  // Until when every member is valid: the earliest of their deadlines.
  std::chrono::steady_clock::time_point valid_until() const noexcept {
    auto t = std::chrono::steady_clock::time_point::max();
    for (auto const& m : members_) t = std::min(t, m.valid_until());
    return members_.empty() ? std::chrono::steady_clock::time_point{} : t;
  }

  // Releases every member (together); completes with the first member's error, if any
  // (error::not_held for a guard made by default, moved from or released before).
  template <class Token = boost::asio::deferred_t>
  auto release(Token&& token = {}) {
    using op = decltype(std::declval<held&>().release(boost::asio::deferred));
    std::vector<op> ops;
    for (auto& m : members_) ops.push_back(m.release(boost::asio::deferred));
    return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
        [](auto handler, std::vector<op> ops) {
          if (ops.empty()) return held{}.release(std::move(handler));
          auto ex = boost::asio::get_associated_executor(handler);
          auto done = [handler = std::move(handler)](std::vector<std::size_t>,
                                                     std::vector<boost::system::error_code> errors) mutable {
            auto failed = std::find_if(errors.begin(), errors.end(), [](auto const& e) { return !!e; });
            std::move(handler)(failed == errors.end() ? boost::system::error_code{} : *failed);
          };
          boost::asio::experimental::make_parallel_group(std::move(ops))
              .async_wait(boost::asio::experimental::wait_for_all(), boost::asio::bind_executor(ex, std::move(done)));
        },
        token, std::move(ops));
  }

  // Completes when the first member's hold ends, saying how (held::wait_lost): with a member lost,
  // hold_status::lost. Only a cancellation is an error, operation_aborted.
  template <class Token = boost::asio::deferred_t>
  auto wait_lost(Token&& token = {}) {
    std::vector<held::state_ptr> states;
    for (auto const& m : members_) states.push_back(m.state_);
    return boost::asio::async_initiate<Token, held::wait_lost_signature>(
        [core = members_.empty() ? nullptr : members_.front().core_](auto handler, std::vector<held::state_ptr> states) {
          held::start_wait_lost(core, std::move(states),
                                boost::asio::any_completion_handler<held::wait_lost_signature>{std::move(handler)});
        },
        token, std::move(states));
  }

 private:
  friend class multi_lock;
  explicit multi_held(std::vector<held> members) : members_{std::move(members)} {}

  std::vector<held> members_;
};

class multi_lock {
 public:
  using acquire_signature = void(boost::system::error_code, multi_held);
  using try_acquire_signature = void(boost::system::error_code, std::optional<multi_held>);

  std::vector<lock> const& members() const noexcept { return members_; }

  // Waits until every member is held, with the client's watchdog lease (renewed).
  template <boost::asio::completion_token_for<acquire_signature> Token = boost::asio::deferred_t>
  auto acquire(Token&& token = {}) const {
    return initiate<acquire_signature>(std::nullopt, std::nullopt, std::forward<Token>(token));
  }
  // The same with a fixed lease for every member and no watchdog.
  template <boost::asio::completion_token_for<acquire_signature> Token = boost::asio::deferred_t>
  auto acquire(std::chrono::milliseconds lease, Token&& token = {}) const {
    return initiate<acquire_signature>(lease, std::nullopt, std::forward<Token>(token));
  }
  // Waits at most `wait` in all (zero: one look at the members); an empty optional if they were not
  // all held by then, and nothing is held.
  template <boost::asio::completion_token_for<try_acquire_signature> Token = boost::asio::deferred_t>
  auto try_acquire(std::chrono::milliseconds wait, Token&& token = {}) const {
    return initiate<try_acquire_signature>(std::nullopt, wait, std::forward<Token>(token));
  }
  template <boost::asio::completion_token_for<try_acquire_signature> Token = boost::asio::deferred_t>
  auto try_acquire(std::chrono::milliseconds wait, std::chrono::milliseconds lease, Token&& token = {}) const {
    return initiate<try_acquire_signature>(lease, wait, std::forward<Token>(token));
  }

  boost::asio::any_io_executor get_executor() const;

 private:
  friend class owner;
  using core_ptr = std::shared_ptr<detail::sync::client_core>;
  using duration = std::optional<std::chrono::milliseconds>;
  multi_lock(core_ptr core, std::string owner_id, std::vector<lock> members)
      : core_{std::move(core)}, owner_{std::move(owner_id)}, members_{std::move(members)} {}

  template <class Signature, class Token>
  auto initiate(duration lease, duration wait, Token&& token) const {
    return boost::asio::async_initiate<Token, Signature>(
        [core = core_, owner = owner_, members = members_, lease, wait](auto h) mutable {
          start_acquire(core, std::move(owner), std::move(members), lease, wait,
                        boost::asio::any_completion_handler<Signature>{std::move(h)});
        },
        token);
  }

  // Whether a member is a handle of another client (or of none).
  static bool foreign(core_ptr const& core, std::vector<lock> const& members);
  // The members, marked so that the acquire of one waited for is not counted in the metrics as a
  // lock's: the multi-lock counts its call.
  static std::vector<lock> as_members(std::vector<lock> members);
  static void start_acquire(core_ptr const& core, std::string owner, std::vector<lock> members, duration lease,
                            duration wait, boost::asio::any_completion_handler<acquire_signature> h);
  static void start_acquire(core_ptr const& core, std::string owner, std::vector<lock> members, duration lease,
                            duration wait, boost::asio::any_completion_handler<try_acquire_signature> h);

  core_ptr core_;
  std::string owner_;
  std::vector<lock> members_;
};

}  // namespace redisync
