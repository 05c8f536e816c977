#pragma once

// Acquiring the fair lock: the lock's acquire with a queue on the server. The first attempt takes
// the waiter's place in the queue; from then on this client's liveness beats keep it (one beat per
// client, not per waiter), and a waiter tries again when the lock would expire, when it is called
// by name, when Redisson's unlock message comes, or soon after another client's waiter was called
// (which may be dead). A waiter that gives up leaves the queue at once.

#include "primitives/lock_protocol/acquire.hpp"

namespace redisync::detail::fair_protocol {

class fair_acquire final : public lock_protocol::lock_acquire {
 public:
  fair_acquire(std::shared_ptr<sync::client_core> core, lock_protocol::acquire_args a, handler_type handler);
  lock_kind kind() const override { return lock_kind::fair; }

 private:
  bool queues_on_server() const override { return true; }
  script const& attempt_script() const override;
  io::outgoing attempt(bool retry, bool by_digest) override;
  void undo_late_grant(io::error_code ec, io::response const& replies, std::function<void()> then) override;
  outcome read(io::error_code ec, io::response& replies) override;
  void undo(std::function<void()> then) override;
  void complete(io::error_code ec, bool held) override;
};


}  // namespace redisync::detail::fair_protocol
