#pragma once

// Releasing the reentrant lock (the fair lock through its queue, a read-write lock's side without
// hand-offs), one level at a time, as one
// state machine for the common case (the last level, one script call completed from its reply) and
// every other: a hand-off to this client's first waiter inside the release script (for a fair
// lock, only if the server finds it at the head of the queue); a retry with the count it started
// from when the outcome was lost; a plain release when the server refuses the hand-off; and, when
// the server refuses the release itself, a retry in the background (50 ms doubling to 1 s) until it
// goes through or the hold ends, with the hold's renewal stopped meanwhile.

#include "primitives/lock/protocol.hpp"

#include <boost/asio/steady_timer.hpp>

#include <optional>

namespace redisync::detail::lock_protocol {

class lock_acquire;

// A release through a guard names its hold and level; one through the lock handle names neither,
// and lets go of the innermost level this client holds for the owner, if any. `kind`: of the
// handle (a hold says itself which kind it is); for a write side, `owner` is its field.
void start_release(std::shared_ptr<sync::client_core> core, std::string name, std::string owner,
                   std::shared_ptr<sync::hold_state> hold, std::shared_ptr<sync::hold_level> level,
                   boost::asio::any_completion_handler<void(io::error_code)> h,
                   lock_kind kind = lock_kind::reentrant);

// The same, with nobody waiting for the outcome (a guard destroyed while holding).
void release_detached(std::shared_ptr<sync::client_core> core, std::string name, std::string owner,
                      std::shared_ptr<sync::hold_state> hold, std::shared_ptr<sync::hold_level> level,
                      lock_kind kind = lock_kind::reentrant);

class lock_release : public std::enable_shared_from_this<lock_release> {
 public:
  lock_release(std::shared_ptr<sync::client_core> core, std::string name, std::string owner,
               std::shared_ptr<sync::hold_state> hold, std::shared_ptr<sync::hold_level> level,
               pending_handler<void(io::error_code)> handler, lock_kind kind);

  void start();

 private:
  void begin();
  void choose_handoff_target();
  void give_back_target();
  void send();
  script const& release_script() const;
  // A fair lock's release: the next waiter of the server's queue is called; no local hand-off.
  io::outgoing fair_call(bool by_digest) const;
  // A read-write lock's: its message wakes the waiters of either side.
  io::outgoing rw_call(bool by_digest) const;
  bool hands_over() const noexcept { return kind_ == lock_kind::reentrant || kind_ == lock_kind::fair; }
  void on_reply(io::error_code ec, io::response replies);
  void succeeded(release_outcome const& outcome);
  void failed(io::error_code ec);
  void retry_later();
  io::error_code apply(release_outcome const& out);
  void complete(io::error_code ec);

  std::shared_ptr<sync::client_core> core_;
  std::string name_;
  std::string owner_;
  lock_kind kind_;
  std::string channel_;  // where this client's waiters for the lock listen
  routing::slot_type slot_;
  std::shared_ptr<sync::hold_state> hold_;
  std::shared_ptr<sync::hold_level> level_;
  pending_handler<void(io::error_code)> handler_;
  std::shared_ptr<lock_acquire> target_;  // the local waiter the lock is handed to, if any
  std::optional<std::int64_t> retry_of_;        // the count before an attempt whose outcome was lost
  int unreadable_left_ = 3;                     // unreadable replies taken for lost outcomes
  int loads_ = 0;                               // NOSCRIPT replies in a row
  bool waking_ = false;                         // its early wake ran: see begin_waking_release
  bool background_ = false;                     // the caller has its answer; retrying on our own
  std::chrono::milliseconds delay_{50};
  sync::clock_type::time_point sent_{};
  std::optional<boost::asio::steady_timer> pause_;
  sync::work_ticket in_progress_;  // while it runs, retries in the background included
};

}  // namespace redisync::detail::lock_protocol
