#include "sync/client_liveness.hpp"

#include "routing/hash_slot.hpp"

#include <scripts.hpp>

#include <vector>

namespace redisync::detail::sync {

std::string alive_prefix(bool sharded, routing::slot_type slot) {
  if (!sharded) return "redisync_alive:";
  return "redisync_alive:{" + std::string{routing::slot_tag(slot)} + "}:";
}

std::uint64_t client_liveness::enlist(routing::slot_type slot, std::function<void()> on_lapse) {
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
  s.beat->renewal = &beat_renewal_;
  s.beat->lease = liveness_;
  s.beat->watchdog = true;
  s.beat->granted = true;
  s.beat->set_valid_until(now + liveness_);
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

script const& client_liveness::beat_renewal::renewal_script() const { return scripts::client_alive; }

script_args client_liveness::beat_renewal::renewal_args(std::span<std::shared_ptr<hold_state>> beats,
                                                        std::chrono::milliseconds liveness) const {
  script_args args;
  args.keys.reserve(beats.size());
  for (auto const& beat : beats) args.keys.push_back(beat->name);
  args.argv.push_back(std::to_string(liveness.count()));
  return args;
}

void client_liveness::beat_renewal::settle(lease_registry& leases, std::shared_ptr<hold_state> const& beat,
                                           std::int64_t flag, clock_type::time_point sent, io::error_code) const {
  beat->set_valid_until(sent + beat->lease);
  // After an unknown answer, soon.
  leases.schedule_renewal(beat, flag < 0 ? clock_type::now() + beat->lease / 10 - beat->lease / 3 : sent);
  liveness_.on_beat(beat->slot, beat.get(), flag);
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
