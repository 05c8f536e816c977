#pragma once

// Waiting for the end of holds (held::wait_lost, multi_held::wait_lost), whatever their kind.

#include <redisync/held.hpp>

#include "sync/client_core.hpp"
#include "sync/hold.hpp"

#include <boost/asio/awaitable.hpp>

#include <memory>
#include <tuple>
#include <vector>

namespace redisync::detail::sync {

// Waits until the first of `holds` ends: how it ended (lost if any of them is lost by then), or
// operation_aborted when cancelled first.
boost::asio::awaitable<std::tuple<io::error_code, hold_status>> wait_lost(
    std::shared_ptr<client_core> core, std::vector<std::shared_ptr<hold_state>> holds);

}  // namespace redisync::detail::sync
