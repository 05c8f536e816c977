#pragma once

// Releasing the reentrant lock (the fair lock through its queue, a read-write lock's side without
// hand-offs), one level at a time, on the shared release loop (sync::release_op, which retries):
// the lock's part is its calls, with a hand-off to this client's first waiter inside the release
// script (for a fair lock, only if the server finds it at the head of the queue), given up for a
// plain release when the server refuses it; the count it started from in a call whose earlier
// outcome was lost; and what the outcome means for the hold, whose renewal stops meanwhile.

#include "primitives/lock_protocol/protocol.hpp"
#include "sync/handoff.hpp"
#include "sync/hold_kind.hpp"
#include "sync/release_op.hpp"

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

// How the holds of each lock kind are released: through start_release, with the kind.
sync::hold_kind const& hold_kind_of(lock_kind kind);
// The lock kind of a hold that a lock acquire made.
lock_kind lock_kind_of(sync::hold_state const& hold);

class lock_release final : public sync::release_op {
 public:
  lock_release(std::shared_ptr<sync::client_core> core, std::string name, std::string owner,
               std::shared_ptr<sync::hold_state> hold, std::shared_ptr<sync::hold_level> level,
               pending_handler<void(io::error_code)> handler, lock_kind kind);

  void start();
  // Makes this the release of a hold that ended here again (sync::hold_kind::release_again): the
  // idempotent call of a last level, which frees the lock only if the owner still has it there,
  // and (but for a read, which has no token of its own) only if the lock has numbered no hold
  // after the one of `token`: the owner's next grant may reach the server first.
  void make_again(std::string why, std::uint64_t token) {
    again_ = std::move(why);
    again_token_ = token;
  }

 private:
  void begin();
  void choose_handoff_target();
  bool hands_over() const noexcept;
  io::error_code apply(release_outcome const& out);
  std::string retry_argument() const;

  // ---- the release loop's questions
  script const& release_script() const override;
  io::outgoing call(bool retry, bool by_digest) override;
  bool read(resp::value const& reply) override;
  bool may_repeat() const override;
  bool goes_on_in_background() const override;
  bool ask_less() override;
  void answered() override;
  void call_failed() override;
  void succeeded() override;
  void complete(io::error_code ec) override;

  std::shared_ptr<sync::client_core> core_;
  lock_kind kind_;
  std::string channel_;  // where this client's waiters for the lock listen
  std::shared_ptr<sync::hold_state> hold_;
  std::shared_ptr<sync::hold_level> level_;
  pending_handler<void(io::error_code)> handler_;
  sync::handoff_target<lock_acquire> target_;  // the local waiter the lock is handed to, if any
  release_outcome outcome_;                // of the reply read
  std::optional<std::int64_t> retry_of_;   // the count before a call whose outcome was lost
  std::optional<std::string> again_;       // why this is a release made again (make_again)
  std::uint64_t again_token_ = 0;          // of the hold a release made again ends
  bool freed_again_ = false;               // made again, it freed the lock
  bool waking_ = false;                    // its early wake ran: see begin_waking_release
  sync::work_ticket in_progress_;          // while it runs, retries in the background included
};

}  // namespace redisync::detail::lock_protocol
