#pragma once

// The lock's other operations: forced release, what the server says about a lock, and waiting for
// the loss of a hold.

#include "primitives/lock/protocol.hpp"

#include <boost/asio/awaitable.hpp>

#include <optional>
#include <tuple>
#include <vector>

namespace redisync::detail::lock_protocol {

using core_ptr = std::shared_ptr<sync::client_core>;

// `read_write`: a read-write lock's, with its read timeouts and writers' marks.
boost::asio::awaitable<std::tuple<io::error_code, bool>> force_release(core_ptr core, std::string name,
                                                                       bool read_write);
boost::asio::awaitable<std::tuple<io::error_code, bool>> is_locked(core_ptr core, std::string name);
boost::asio::awaitable<std::tuple<io::error_code, std::int64_t>> hold_count(core_ptr core, std::string name,
                                                                           std::string owner);
boost::asio::awaitable<std::tuple<io::error_code, std::optional<std::chrono::milliseconds>>> remaining_lease(
    core_ptr core, std::string name);
// Waits until the first of `holds` ends: how it ended (lost if any of them is lost by then), or
// operation_aborted when cancelled first.
boost::asio::awaitable<std::tuple<io::error_code, hold_status>> wait_lost(
    core_ptr core, std::vector<std::shared_ptr<sync::hold_state>> holds);

}  // namespace redisync::detail::lock_protocol
