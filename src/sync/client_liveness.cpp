#include "sync/client_liveness.hpp"

#include "routing/hash_slot.hpp"

#include <vector>

namespace redisync::detail::sync {

std::string alive_prefix(bool sharded, routing::slot_type slot) {
  if (!sharded) return "redisync_alive:";
  return "redisync_alive:{" + std::string{routing::slot_tag(slot)} + "}:";
}

std::uint64_t client_liveness::enlist(routing::slot_type slot, renewal_kind const& kind,
                                      std::function<void()> on_lapse) {
  auto& s = slots_[slot];
  auto const ticket = next_ticket_++;
  s.waiters.emplace(ticket, std::move(on_lapse));
  if (s.beat) return ticket;
  // The waiter's attempt made the key, so the first beat is due a third of the period from now.
  auto const now = clock_type::now();
  s.confirmed = now;
  s.beat = std::make_shared<hold_state>();
  s.beat->name = alive_key(slot);
  s.beat->owner = client_id_;
  s.beat->slot = slot;
  s.beat->renewal = &kind;
  s.beat->lease = liveness_;
  s.beat->watchdog = true;
  s.beat->granted = true;
  s.beat->set_valid_until(now + liveness_);
  s.beat->on_beat = [this, slot, beat = s.beat.get()](std::int64_t flag) { on_beat(slot, beat, flag); };
  leases_.schedule_renewal(s.beat, now);
  return ticket;
}

void client_liveness::leave(routing::slot_type slot, std::uint64_t ticket) {
  auto const it = slots_.find(slot);
  if (it == slots_.end()) return;
  it->second.waiters.erase(ticket);
  if (!it->second.waiters.empty()) return;
  // The key expires within a period by itself.
  leases_.forget(*it->second.beat);
  slots_.erase(it);
}

// 1: the key was there; 0: it was gone; below 0: no answer (the watchdog tries again soon).
// `beat` tells a beat that was in flight when its slot's last waiter left from the next one's.
void client_liveness::on_beat(routing::slot_type slot, hold_state const* beat, std::int64_t flag) {
  auto const it = slots_.find(slot);
  if (it == slots_.end() || it->second.beat.get() != beat || flag < 0) return;
  auto const now = clock_type::now();
  bool const lapsed = flag == 0 || now - it->second.confirmed > liveness_;
  it->second.confirmed = now;
  if (!lapsed) return;
  // A waiter told may finish, and leave, inside its callback.
  std::vector<std::function<void()>> tell;
  for (auto const& [ticket, lapse] : it->second.waiters) tell.push_back(lapse);
  for (auto const& lapse : tell) lapse();
}

}  // namespace redisync::detail::sync
