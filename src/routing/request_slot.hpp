#pragma once

// Where an application's own request (client::exec, client::query) goes in a cluster: the slot of
// the keys its commands name. Which arguments are keys follows the command table for the commands
// that have keys elsewhere than first (none, all, every other, EVAL's numkeys); any other command
// names its key first.

#include <redisync/error.hpp>

#include "routing/router.hpp"

#include <optional>
#include <string_view>

namespace redisync::detail::routing {

struct request_slot {
  std::optional<slot_type> slot;  // empty: no command names a key (it may go to any master)
  error ec{};                     // cross_slot: keys of more than one slot
};

request_slot slot_of_request(router const& r, std::string_view payload);

}  // namespace redisync::detail::routing
