#pragma once

// A release that hands what it frees straight to this client's first waiter (a lock, permits)
// takes that waiter out of its queue while the release is on its way, and gives it back if the
// hand-off does not happen.

#include "sync/client_core.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <utility>

namespace redisync::detail::sync {

// A waiter on `channel`, taken out of the queue for a hand-off: the first of the first `reach` that
// sleeps (no attempt of its own on the way) and `accepts` it, if this client has not handed over
// too many times in a row (config::max_local_handoffs: others get their turn); null otherwise.
// A lock reaches the head only (its waiters are served in order); permits reach past waiters whose
// attempts are on the way, as several take permits at once. Every waiter of the channel is a
// `Waiter`.
template <class Waiter, class Accepts>
std::shared_ptr<Waiter> take_handoff_target(client_core& core, std::string const& channel, Accepts accepts,
                                            std::size_t reach = 1) {
  if (!core.has_waiters(channel)) return nullptr;
  auto& queue = core.queue(channel);
  if (queue.consecutive_handoffs >= core.cfg().max_local_handoffs) return nullptr;
  auto const takes = [&accepts](waiter const& w) {
    auto const& candidate = static_cast<Waiter const&>(w);
    return candidate.can_take_handoff() && accepts(candidate);
  };
  auto target = std::static_pointer_cast<Waiter>(queue.first_within(reach, takes));
  if (!target) return nullptr;
  target->woken = false;
  target->handoff_pending = true;
  queue.remove(*target);
  core.count_waiter(-1);
  return target;
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

// The waiter a release hands over to while the release is on its way, if any: the release gives it
// back to its queue when the hand-off does not happen (the call failed, or the server refused the
// hand-off and the release is asked again without it), and takes it once the outcome is known.
template <class Waiter>
class handoff_target {
 public:
  template <class Accepts>
  void choose(client_core& core, std::string const& channel, Accepts accepts, std::size_t reach = 1) {
    target_ = take_handoff_target<Waiter>(core, channel, accepts, reach);
  }
  explicit operator bool() const noexcept { return target_ != nullptr; }
  Waiter* operator->() const noexcept { return target_.get(); }
  std::shared_ptr<Waiter> take() noexcept { return std::exchange(target_, nullptr); }
  // Whether there was one to give back.
  bool give_back(client_core& core, std::string const& channel) {
    if (!target_) return false;
    give_back_handoff_target(core, channel, take());
    return true;
  }

 private:
  std::shared_ptr<Waiter> target_;
};

}  // namespace redisync::detail::sync
