#pragma once

// Acquiring the reentrant lock: the shared acquire loop (sync/acquire_op.hpp) with the lock's
// attempt (lock_calls.lua: acquire, or retry-acquire after a lost outcome), its reading of replies
// and its undo.

#include <redisync/held.hpp>

#include "primitives/lock/protocol.hpp"
#include "sync/launch_acquire.hpp"

#include <boost/asio/awaitable.hpp>

#include <variant>

namespace redisync::detail::lock_protocol {

using acquire_signature = void(io::error_code, held);
using try_acquire_signature = void(io::error_code, std::optional<held>);

struct acquire_args {
  std::string name;
  std::string owner;
  std::optional<std::chrono::milliseconds> lease;  // nothing: the watchdog lease, renewed
  std::optional<std::chrono::milliseconds> wait;   // nothing: wait until held
  bool spin = false;                               // wait by polling, not on the channel
  bool counted = true;                             // see sync::acquire_op::params::counted
};

// Starts an acquire on the client's strand; `h` completes on its own executor.
void start_acquire(std::shared_ptr<sync::client_core> core, acquire_args a,
                   boost::asio::any_completion_handler<acquire_signature> h);
void start_acquire(std::shared_ptr<sync::client_core> core, acquire_args a,
                   boost::asio::any_completion_handler<try_acquire_signature> h);

// Releases one level of `owner`'s hold of `name` if the owner's count shows that an acquire,
// begun when the count was `count_before`, went through. Safe to repeat; without a connection,
// repeated until `lease` has passed (the level is gone by then).
boost::asio::awaitable<void> undo_acquire(std::shared_ptr<sync::client_core> core, std::string name,
                                          std::string owner, std::int64_t count_before,
                                          std::chrono::milliseconds lease);

// Repeats `args`, a call of `s` that releases at most the level an acquire added (so it is safe to
// repeat), until its outcome is known or `lease` has passed. A call that freed something is told
// as grant_undone, or as release_made_again with `again` when that says why it was made again
// (sync::hold_kind::release_again).
boost::asio::awaitable<void> undo_with(std::shared_ptr<sync::client_core> core, script const& s, script_args args,
                                       std::string name, std::string owner, std::chrono::milliseconds lease,
                                       std::string again = {});

// The record of a hold that `owner` (a lock's owner field) does not have yet, for its first grant.
std::shared_ptr<sync::hold_state> new_hold_of(std::string name, std::string owner, std::string channel,
                                              routing::slot_type slot, sync::renewal_kind const& renewal,
                                              sync::hold_kind const& kind, std::chrono::milliseconds lease,
                                              bool watchdog);
// Applies a grant of `token` (`count` levels in all) by a call sent at `sent` to `hold`: it is valid
// from then on for its lease, kept by the client and renewed by the watchdog.
void grant_hold(sync::client_core& core, std::shared_ptr<sync::hold_state> const& hold, std::uint64_t token,
                std::int64_t count, sync::clock_type::time_point sent);

// What the metrics count a hold of `kind` as.
primitive primitive_of(lock_kind kind);

// A guard for a new level of `hold`.
held guard_for(std::shared_ptr<sync::client_core> const& core, std::shared_ptr<sync::hold_state> const& hold);

// The fair lock's acquire (primitives/fair_lock) is this one with a queue on the server; the
// read-write lock's (primitives/rw_lock), with its two sides.
class lock_acquire : public sync::acquire_op {
 public:
  using handler_type = std::variant<pending_handler<acquire_signature>, pending_handler<try_acquire_signature>>;

  lock_acquire(std::shared_ptr<sync::client_core> core, acquire_args a, handler_type handler);

  // A release of this client passed the lock to this waiter with `token`, sent at `sent`; false
  // if that was too late to count (see acquire_op::confirm_grant), and nothing is granted here.
  bool take_handoff(std::uint64_t token, sync::clock_type::time_point sent);
  std::chrono::milliseconds lease() const noexcept { return hold_ ? hold_->lease : lease_; }
  // What the hold of a grant is.
  virtual lock_kind kind() const { return lock_kind::reentrant; }
  // Whether a release of this client may hand it the lock without an attempt of its own (an
  // election's candidate may not: its attempt is what records its term).
  virtual bool takes_handoffs() const { return true; }
  std::optional<primitive> counted_as() const override;

 protected:
  // Waiters listen on `channel` (first: it is made from `a` before `a` is moved).
  lock_acquire(std::string channel, std::shared_ptr<sync::client_core> core, acquire_args a, handler_type handler);

  io::error_code check_arguments() const override;
  bool prepare() override;
  script const& attempt_script() const override;
  sync::message_policy policy() const override;
  io::outgoing attempt(bool retry, bool by_digest) override;
  void undo_late_grant(io::error_code ec, io::response const& replies, std::function<void()> then) override;
  outcome read(io::error_code ec, io::response& replies) override;
  void undo(std::function<void()> then) override;
  void complete(io::error_code ec, bool held) override;

  // Whether an attempt's reply (no error) granted something or cannot be read.
  virtual bool may_grant(resp::value const& reply) const;
  // How the watchdog renews the hold of a grant, and how its levels are released.
  virtual sync::renewal_kind const& hold_renewal() const { return renewal(); }
  virtual sync::hold_kind const& kind_of_hold() const;

  // A waiter queued on the server (the fair lock's queue, a read-write lock's writer marks) keeps
  // this client alive there until it is done (sync::client_liveness); told that the client's key
  // lapsed, it tries again, which takes the lock or queues it anew if it was dropped.
  void enlist_liveness();
  // Ends what enlist_liveness began; false if it was not enlisted.
  bool leave_liveness();
  // Called by name while it was not here, a waiter of another client may be dead: it takes
  // nothing, and its client's key is gone a liveness period later at most (a little more for
  // timers), when the next attempt passes it over.
  std::chrono::milliseconds look_after_passed_over() const override;

  void grant(std::uint64_t token, std::int64_t count, sync::clock_type::time_point sent);
  // Whether a grant made by a call sent at `sent` is already past its validity deadline.
  bool too_late(sync::clock_type::time_point sent) const;
  // The hold record of an owner that held nothing yet, made when the lock is granted.
  sync::hold_state& new_hold();
  std::int64_t count_before() const noexcept { return count_before_; }
  std::shared_ptr<sync::client_core> const& core() const noexcept { return core_; }

 private:
  std::shared_ptr<sync::client_core> core_;
  std::chrono::milliseconds lease_;  // the watchdog's when none was given
  bool watchdog_;
  std::optional<std::chrono::milliseconds> wait_;
  // The hold: one the owner had (a reentrant acquire), or one made for a grant. A waiter has none:
  // waiters are many, and small.
  std::shared_ptr<sync::hold_state> hold_;
  std::int64_t count_before_ = 0;
  std::optional<std::uint64_t> liveness_ticket_;
  handler_type handler_;
  sync::work_ticket in_progress_;  // until the caller has its answer
};

}  // namespace redisync::detail::lock_protocol
