#pragma once

// Acquiring the fair lock: the lock's acquire with a queue on the server. The first attempt takes
// the waiter's place in the queue; from then on the watchdog keeps the place alive with heartbeats,
// which also tell a head that finds the lock free to try (a lost call costs a heartbeat period).
// A waiter that gives up leaves the queue at once.

#include "primitives/lock/acquire.hpp"

namespace redisync::detail::fair_protocol {

class fair_acquire final : public lock_protocol::lock_acquire {
 public:
  fair_acquire(std::shared_ptr<sync::client_core> core, lock_protocol::acquire_args a, handler_type handler);

 private:
  bool queues_on_server() const override { return true; }
  lock_kind kind() const override { return lock_kind::fair; }
  script const& attempt_script() const override;
  sync::message_policy policy() const override;
  io::outgoing attempt(bool retry, bool by_digest) override;
  void undo_late_grant(io::error_code ec, io::response const& replies, std::function<void()> then) override;
  outcome read(io::error_code ec, io::response& replies) override;
  void undo(std::function<void()> then) override;
  void complete(io::error_code ec, bool held) override;

  // Starts, or goes on with, the heartbeats of this waiter's place.
  void keep_place();
  void on_beat(std::int64_t flag);

  std::shared_ptr<sync::hold_state> place_;  // while queued (or maybe queued)
};

void start_acquire(std::shared_ptr<sync::client_core> core, lock_protocol::acquire_args a,
                   boost::asio::any_completion_handler<lock_protocol::acquire_signature> h);
void start_acquire(std::shared_ptr<sync::client_core> core, lock_protocol::acquire_args a,
                   boost::asio::any_completion_handler<lock_protocol::try_acquire_signature> h);

}  // namespace redisync::detail::fair_protocol
