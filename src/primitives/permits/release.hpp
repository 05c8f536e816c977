#pragma once

// Giving permits back: the shared release loop (sync::release_op) with permits_calls.lua's
// `release`, which is safe to repeat (a permit given back is no longer among the holders). A
// permit hold has one level: its guard's.

#include "primitives/permits/protocol.hpp"
#include "sync/hold_kind.hpp"
#include "sync/release_op.hpp"

namespace redisync::detail::permits_protocol {

class permit_release final : public sync::release_op {
 public:
  permit_release(std::shared_ptr<sync::client_core> core, std::shared_ptr<sync::hold_state> hold,
                 std::shared_ptr<sync::hold_level> level, pending_handler<void(io::error_code)> handler);
  void start();

 private:
  script const& release_script() const override;
  io::outgoing call(bool retry, bool by_digest) override;
  bool read(resp::value const& reply) override;
  bool may_repeat() const override;
  bool goes_on_in_background() const override;
  void succeeded() override;
  void complete(io::error_code ec) override;

  std::shared_ptr<sync::client_core> core_;
  std::shared_ptr<sync::hold_state> hold_;
  std::shared_ptr<sync::hold_level> level_;
  pending_handler<void(io::error_code)> handler_;
  std::int64_t outcome_ = 0;  // of the reply read: 0 given back, -1 not held
  bool repeated_ = false;     // a call was sent again after its outcome was lost
  sync::work_ticket in_progress_;
};

}  // namespace redisync::detail::permits_protocol
