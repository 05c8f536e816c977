#pragma once

// Acquiring a side of the read-write lock: the lock's acquire with rw_calls.lua's `read` or `write`.
// The owner of a write is its field, `<owner>:write`, so that an owner's two sides are two holds.
// A writer sends its first try at once, past this client's waiting readers, and this client's
// readers that come after it queue behind it from then on; a waiting writer's mark is kept by this
// client's liveness beats (one per client, however many writers wait), and it tries again when
// the lock would expire; one that gives up takes its mark away at once. A read by an owner that holds the write goes straight to Redis (a downgrade never
// waits behind the readers that the write keeps out).

#include "primitives/lock_protocol/acquire.hpp"

namespace redisync::detail::rw_protocol {

class rw_acquire final : public lock_protocol::lock_acquire {
 public:
  rw_acquire(lock_kind side, std::shared_ptr<sync::client_core> core, lock_protocol::acquire_args a,
             handler_type handler);

  // A release gave this writer the lock (rw_calls.lua's grant): it confirms with a try. An attempt
  // on its way learns of it from its reply, or from the try after it: a marked writer's tries say
  // it held nothing before.
  void take_grant();

 private:
  bool writes() const noexcept { return side_ == lock_kind::write; }
  bool prefer_writers() const;
  bool queues_on_server() const override { return writes(); }
  bool queues_before_trying() const override { return writes(); }
  bool yields_to_arrivals() const override { return !writes() && prefer_writers(); }
  lock_kind kind() const override { return side_; }
  sync::renewal_kind const& hold_renewal() const override;
  bool prepare() override;
  script const& attempt_script() const override;
  sync::message_policy policy() const override;
  io::outgoing attempt(bool retry, bool by_digest) override;
  outcome read(io::error_code ec, io::response& replies) override;
  void undo_late_grant(io::error_code ec, io::response const& replies, std::function<void()> then) override;
  void undo(std::function<void()> then) override;
  void complete(io::error_code ec, bool held) override;

  lock_kind side_;
  bool marked_ = false;  // a write try may have left a mark (its client is kept alive then)
};

// `a.owner` is the owner's field of `side` (field_of).
void start_acquire(lock_kind side, std::shared_ptr<sync::client_core> core, lock_protocol::acquire_args a,
                   boost::asio::any_completion_handler<lock_protocol::acquire_signature> h);
void start_acquire(lock_kind side, std::shared_ptr<sync::client_core> core, lock_protocol::acquire_args a,
                   boost::asio::any_completion_handler<lock_protocol::try_acquire_signature> h);

}  // namespace redisync::detail::rw_protocol
