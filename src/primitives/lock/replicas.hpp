#pragma once

// config::wait_replicas: after a grant, WAIT on the node that wrote it (the connection that wrote
// it, so that its write is among those waited for).

#include "sync/client_core.hpp"

#include <boost/asio/awaitable.hpp>

#include <string_view>

namespace redisync::detail::lock_protocol {

// Success when the configuration asks for no replica, or enough acknowledged in time; else
// error::not_replicated (told as an event about `name`): the caller undoes the grant.
boost::asio::awaitable<io::error_code> confirm_replicas(sync::client_core& core, routing::slot_type slot,
                                                        std::string_view name);

}  // namespace redisync::detail::lock_protocol
