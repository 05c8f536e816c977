#pragma once

// Leased permits on Redis (permits_calls.lua says the layout): a permit is a hold whose owner is
// the permit's id, with its own lease, fencing token and watchdog renewal; `k` permits taken at
// once are one hold. The keys of a semaphore share its slot (Redisson's naming: helper keys wrap
// the name in {}).

#include "sync/client_core.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace redisync::detail::permits_protocol {

std::string leases_key_of(std::string_view name);
std::string holders_key_of(std::string_view name);
std::string token_key_of(std::string_view name);
std::string channel_of(std::string_view name);
// Fair permits' queue of waiters (fair_queue.lua's layout, `client/id` by arrival).
std::string queue_key_of(std::string_view name);

// A fresh permit id of `owner`: unique in the process, and the owner's client id makes it unique
// everywhere.
std::string new_permit_id(std::string_view owner);

// What an acquire answered: a grant with its token, or not enough permits until `bound` ms from now
// at most (-1: no lease ends by itself).
struct acquire_reply {
  bool read = false;  // false: no reply of this shape
  bool granted = false;
  std::uint64_t token = 0;
  std::int64_t bound = -1;
};
acquire_reply read_acquire_reply(resp::value const& reply);

// The watchdog's renewal of permits (permits_renew.lua).
sync::renewal_kind const& renewal();
// How a permit hold is released (release.hpp), fair or not.
sync::hold_kind const& permit_hold_kind(bool fair);

// Messages of fair permits' channel: the head called by name (`client/id`) wakes that waiter (or
// tells this client's first waiter that another client's was called); a count, published by a
// call that is not fair, lets this client's first waiter try.
void on_fair_message(sync::waiter_queue& queue, std::string_view message);

}  // namespace redisync::detail::permits_protocol
