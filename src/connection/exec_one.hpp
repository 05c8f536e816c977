#pragma once

#include <redisync/connection.hpp>

#include <boost/asio/awaitable.hpp>

#include <tuple>

namespace redisync::detail {

// One command and its single reply. A server error becomes its typed code; the reply then holds
// the server's text, for diagnostics.
boost::asio::awaitable<std::tuple<boost::system::error_code, resp::value>> exec_one(connection& conn,
                                                                                   resp::request req);

}  // namespace redisync::detail
