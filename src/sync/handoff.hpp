#pragma once

// A release that hands what it frees straight to this client's first waiter (a lock, permits)
// takes that waiter out of its queue while the release is on its way, and gives it back if the
// hand-off does not happen.

#include "sync/client_core.hpp"

#include <memory>
#include <string>

namespace redisync::detail::sync {

// The first waiter on `channel`, taken out of the queue for a hand-off, if one sleeps (no attempt of
// its own on the way), `accepts` it, and this client has not handed over too many times in a row
// (config::max_local_handoffs: others get their turn); null otherwise. Every waiter of the channel
// is a `Waiter`.
template <class Waiter, class Accepts>
std::shared_ptr<Waiter> take_handoff_target(client_core& core, std::string const& channel, Accepts accepts) {
  if (!core.has_waiters(channel)) return nullptr;
  auto& queue = core.queue(channel);
  if (queue.consecutive_handoffs >= core.cfg().max_local_handoffs) return nullptr;
  auto head = std::static_pointer_cast<Waiter>(queue.head());
  if (!head || !head->can_take_handoff() || !accepts(*head)) return nullptr;
  head->woken = false;
  head->handoff_pending = true;
  queue.remove(*head);
  core.count_waiter(-1);
  return head;
}

// The hand-off did not happen: the waiter goes back to the head of its queue and tries.
inline void give_back_handoff_target(client_core& core, std::string const& channel,
                                     std::shared_ptr<acquire_op> target) {
  target->handoff_pending = false;
  if (target->done()) return;
  core.queue(channel).push_front(target);
  core.count_waiter(1);
  target->woken = true;
  target->on_wake(true);
}

}  // namespace redisync::detail::sync
