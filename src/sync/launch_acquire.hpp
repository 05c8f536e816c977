#pragma once

// The one place where an acquire of any primitive starts.

#include "sync/client_core.hpp"
#include "sync/launch.hpp"

namespace redisync::detail::sync {

// Makes an `Op` (an acquire_op of any primitive, made from `extra...`, the client, `a` and the
// caller's handler) on the client's strand and starts it; `h` completes on its own executor. The
// caller's cancellation reaches the op there.
template <class Op, class Args, class Signature, class... Extra>
void launch_acquire(std::shared_ptr<client_core> core, Args a,
                    boost::asio::any_completion_handler<Signature> h, Extra... extra) {
  pending_handler<Signature> handler{std::move(h), core->homes()};
  // The caller's cancellation slot is assigned here, on the caller's thread, where it is emitted;
  // its emissions reach the op on the strand, after the op was made there.
  auto op_cell = std::make_shared<std::weak_ptr<acquire_op>>();
  bool const cancellable = forward_cancellation(handler, core->strand(), [op_cell](boost::asio::cancellation_type t) {
    if (auto op = op_cell->lock()) op->cancel(t);
  });
  auto& host = *core;
  host.to_strand([core = std::move(core), a = std::move(a), handler = std::move(handler), op_cell, cancellable,
                  extra...]() mutable {
    auto op = std::make_shared<Op>(extra..., core, std::move(a), std::move(handler));
    *op_cell = op;
    if (cancellable) op->enable_attempt_cancellation();
    op->start();
  });
}

}  // namespace redisync::detail::sync
