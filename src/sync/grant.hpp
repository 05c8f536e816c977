#pragma once

// Creating, granting and guarding holds: what every primitive does with a grant its script made,
// whatever the script (a lock's acquire, a multi-lock's take, a permit, a leadership).

#include <redisync/held.hpp>

#include "sync/client_core.hpp"
#include "sync/hold.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace redisync::detail::sync {

// The record of a hold that `owner` (its field in the primitive's keys) does not have yet, for its
// first grant.
std::shared_ptr<hold_state> new_hold(std::string name, std::string owner, std::string channel, routing::slot_type slot,
                                     renewal_kind const& renewal, hold_kind const& kind,
                                     std::chrono::milliseconds lease, bool watchdog);

// Applies a grant of `token` (`count` levels in all) by a call sent at `sent` to `hold`: it is valid
// from then on for its lease, kept by the client and renewed by the watchdog.
void grant_hold(client_core& core, std::shared_ptr<hold_state> const& hold, std::uint64_t token, std::int64_t count,
                clock_type::time_point sent);

// The count an attempt names for the owner's levels on the client's books: '' for a first attempt of
// an owner that holds nothing of the name (the common case, and the shortest call), else the count
// before the attempt (a nested acquire, or a retry of one whose outcome was lost). A script that
// is told the owner holds nothing takes over any level of the owner it finds (left by a release a
// failover lost) instead of re-entering it, so the hold's release frees the lock.
std::string count_argument(bool retry, std::int64_t count_before);

// A guard for a new level of `hold`.
held guard_for(std::shared_ptr<client_core> const& core, std::shared_ptr<hold_state> const& hold);

}  // namespace redisync::detail::sync
