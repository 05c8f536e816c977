#include "sync/grant.hpp"

#include "sync/held_access.hpp"
#include "sync/lease_registry.hpp"

namespace redisync::detail::sync {

std::shared_ptr<hold_state> new_hold(std::string name, std::string owner, std::string channel, routing::slot_type slot,
                                     renewal_kind const& renewal, hold_kind const& kind,
                                     std::chrono::milliseconds lease, bool watchdog) {
  auto hold = std::make_shared<hold_state>();
  hold->key = hold_key(owner, name);
  hold->name = std::move(name);
  hold->owner = std::move(owner);
  hold->channel = std::move(channel);
  hold->slot = slot;
  hold->renewal = &renewal;
  hold->kind = &kind;
  hold->lease = lease;
  hold->watchdog = watchdog;
  return hold;
}

void grant_hold(client_core& core, std::shared_ptr<hold_state> const& hold, std::uint64_t token, std::int64_t count,
                clock_type::time_point sent) {
  if (!hold->granted) {
    hold->token = token;
    hold->granted_at = core.now();
    hold->masters_at_grant = core.master_changes();
  }
  hold->granted = true;
  hold->count = count;
  hold->set_valid_until(validity_deadline(sent, hold->lease));
  hold->status = hold_status::held;
  core.put_hold(hold);
  if (hold->watchdog) core.leases().schedule_renewal(hold, sent);
  core.leases().schedule_validity_check(hold);
}

std::string count_argument(bool retry, std::int64_t count_before) {
  return retry || count_before > 0 ? std::to_string(count_before) : std::string{};
}

held guard_for(std::shared_ptr<client_core> const& core, std::shared_ptr<hold_state> const& hold) {
  return held_access::make(core, hold, hold->add_level(), hold->token);
}

}  // namespace redisync::detail::sync
