#pragma once

// Giving permits back: the shared release loop (sync::release_op) with permits_calls.lua's
// `release`, which is safe to repeat (a permit given back is no longer among the holders). A
// permit hold has one level: its guard's. When this client's first waiter for the semaphore sleeps,
// the permits go straight to it inside the release (`release-to`), as a lock is handed over: no
// message and no attempt of its own, unless too few permits are free for it.

#include "primitives/permits/protocol.hpp"
#include "sync/handoff.hpp"
#include "sync/hold_kind.hpp"
#include "sync/release_op.hpp"

namespace redisync::detail::permits_protocol {

class permits_acquire;

class permit_release final : public sync::release_op {
 public:
  permit_release(std::shared_ptr<sync::client_core> core, std::shared_ptr<sync::hold_state> hold,
                 std::shared_ptr<sync::hold_level> level, pending_handler<void(io::error_code)> handler, bool fair);
  void start();

 private:
  script const& release_script() const override;
  io::outgoing call(bool retry, bool by_digest) override;
  bool read(resp::value const& reply) override;
  bool may_repeat() const override;
  bool goes_on_in_background() const override;
  bool ask_less() override;
  void call_failed() override;
  void succeeded() override;
  void complete(io::error_code ec) override;

  void choose_handoff_target();

  std::shared_ptr<sync::client_core> core_;
  std::shared_ptr<sync::hold_state> hold_;
  std::shared_ptr<sync::hold_level> level_;
  pending_handler<void(io::error_code)> handler_;
  bool fair_;
  std::string channel_;
  sync::handoff_target<permits_acquire> target_;  // the waiter the permits go on to, if any
  std::int64_t outcome_ = 0;  // of the reply read: 0 given back, -1 not held, 1 passed on
  std::uint64_t handoff_token_ = 0;
  bool repeated_ = false;     // a call was sent again after its outcome was lost
  sync::work_ticket in_progress_;
};

}  // namespace redisync::detail::permits_protocol
