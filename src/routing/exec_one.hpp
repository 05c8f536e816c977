#pragma once

#include "routing/router.hpp"

#include <boost/asio/awaitable.hpp>

#include <tuple>

namespace redisync::detail::routing {

// One command to the node of `slot` and its single reply. A server error becomes its typed code;
// the reply then holds the server's text, for diagnostics.
boost::asio::awaitable<std::tuple<io::error_code, resp::value>> exec_one(router& r, slot_type slot,
                                                                          resp::request req);

// The replies of a request to the node of `slot`.
boost::asio::awaitable<std::tuple<io::error_code, io::response>> exec(router& r, slot_type slot, resp::request req);

}  // namespace redisync::detail::routing
