#pragma once

// redisync inspect's parts: locks (inspect.cpp) and semaphores (inspect_permits.cpp).

#include "cli/common.hpp"

#include <boost/asio/awaitable.hpp>

#include <string>
#include <string_view>

namespace redisync::cli {

// Prints what Redis knows of the semaphore `name` whose key has `type`; false if it is none (no
// string, no hash of leased permits), and nothing was printed.
boost::asio::awaitable<bool> inspect_semaphore(client& c, std::string const& name, std::string_view type, bool as_json);

}  // namespace redisync::cli
