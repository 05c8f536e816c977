#pragma once

// The other operations on a lock hash: forced release, and what the server says about a lock.

#include "primitives/lock_protocol/protocol.hpp"

#include <boost/asio/awaitable.hpp>

#include <optional>
#include <tuple>

namespace redisync::detail::lock_protocol {

using core_ptr = std::shared_ptr<sync::client_core>;

// Deletes the lock whoever holds it, as the lock of `kind` (a read-write lock's goes with its
// read timeouts and writers' marks).
boost::asio::awaitable<std::tuple<io::error_code, bool>> force_release(core_ptr core, std::string name,
                                                                       lock_kind kind);
boost::asio::awaitable<std::tuple<io::error_code, bool>> is_locked(core_ptr core, std::string name);
boost::asio::awaitable<std::tuple<io::error_code, std::int64_t>> hold_count(core_ptr core, std::string name,
                                                                           std::string owner);
boost::asio::awaitable<std::tuple<io::error_code, std::optional<std::chrono::milliseconds>>> remaining_lease(
    core_ptr core, std::string name);
}  // namespace redisync::detail::lock_protocol
