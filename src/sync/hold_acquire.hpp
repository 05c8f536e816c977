#pragma once

// An acquire that grants a hold (a lock of any kind, permits, a leadership): the acquire loop
// (acquire_op) with what every such primitive does around its script. The arguments are checked,
// a reentrant acquire nests in the hold its owner has, a grant makes the hold (or adds a level) and
// is refused when it came past its deadline, a release of this client can hand the hold over, a
// waiter queued on the server keeps its client alive there, and the caller gets a guard. The
// primitive supplies its attempt, the reading of its replies, its undo, and what its holds are.

#include <redisync/held.hpp>

#include "sync/acquire_op.hpp"
#include "sync/client_core.hpp"
#include "sync/grant.hpp"
#include "sync/hold.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>

namespace redisync::detail::sync {

using acquire_signature = void(io::error_code, held);
using try_acquire_signature = void(io::error_code, std::optional<held>);

struct hold_request {
  std::string name;
  std::string owner;                               // its field in the primitive's keys
  std::optional<std::chrono::milliseconds> lease;  // nothing: the watchdog lease, renewed
  std::optional<std::chrono::milliseconds> wait;   // nothing: wait until held
  bool spin = false;                               // wait by polling, not on the channel
  bool counted = true;                             // see acquire_op::params::counted
};

class hold_acquire : public acquire_op {
 public:
  using handler_type = std::variant<pending_handler<acquire_signature>, pending_handler<try_acquire_signature>>;

  // A release of this client passed the hold to this waiter with `token`, sent at `sent`; false if
  // that was too late to count (see acquire_op::confirm_grant), and nothing is granted here.
  bool take_handoff(std::uint64_t token, clock_type::time_point sent);
  std::chrono::milliseconds lease() const noexcept { return hold_ ? hold_->lease : lease_; }

 protected:
  // Waiters listen on `channel` (first: it is made from `a` before `a` is moved).
  hold_acquire(std::string channel, std::shared_ptr<client_core> core, hold_request a, handler_type handler);

  io::error_code check_arguments() const override;
  bool prepare() override;
  void undo_late_grant(io::error_code ec, io::response const& replies, std::function<void()> then) override;
  void complete(io::error_code ec, bool held) override;

  // Whether an attempt's reply (no error) granted something or cannot be read.
  virtual bool may_grant(resp::value const& reply) const = 0;
  // How the watchdog renews the hold of a grant, and how its levels are released.
  virtual renewal_kind const& hold_renewal() const = 0;
  virtual hold_kind const& kind_of_hold() const = 0;

  // A waiter queued on the server (the fair lock's queue, a read-write lock's writer marks, fair
  // permits) keeps this client alive there until it is done (client_liveness); told that the
  // client's key lapsed, it tries again, which takes the hold or queues it anew if it was dropped.
  void enlist_liveness();
  // Ends what enlist_liveness began; false if it was not enlisted.
  bool leave_liveness();
  // Called by name while it was not here, a waiter of another client may be dead: it takes
  // nothing, and its client's key is gone a liveness period later at most (a little more for
  // timers), when the next attempt passes it over.
  std::chrono::milliseconds look_after_passed_over() const override;

  void grant(std::uint64_t token, std::int64_t count, clock_type::time_point sent);
  // Whether a grant made by a call sent at `sent` is already past its validity deadline.
  bool too_late(clock_type::time_point sent) const;
  // The hold record of an owner that held nothing yet, made when the hold is granted.
  hold_state& new_hold();
  std::int64_t count_before() const noexcept { return count_before_; }
  // sync::count_argument of this attempt.
  std::string count_argument(bool retry) const { return sync::count_argument(retry, count_before_); }
  std::shared_ptr<client_core> const& core() const noexcept { return core_; }

 private:
  std::shared_ptr<client_core> core_;
  std::chrono::milliseconds lease_;  // the watchdog's when none was given
  bool watchdog_;
  std::optional<std::chrono::milliseconds> wait_;
  // The hold: one the owner had (a reentrant acquire), or one made for a grant. A waiter has none:
  // waiters are many, and small.
  std::shared_ptr<hold_state> hold_;
  std::int64_t count_before_ = 0;
  std::optional<std::uint64_t> liveness_ticket_;
  handler_type handler_;
  work_ticket in_progress_;  // until the caller has its answer
};

}  // namespace redisync::detail::sync
