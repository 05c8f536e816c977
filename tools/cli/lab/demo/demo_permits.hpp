#pragma once

// The demo's section on leased permits (demo_permits.cpp).

#include "cli/common/common.hpp"
#include "cli/lab/demo/demo_report.hpp"

#include <boost/asio/awaitable.hpp>

#include <string>

namespace redisync::cli {

// Its names start with `prefix`; its processes reach Redis at `url`.
boost::asio::awaitable<void> leased_permits_section(client& c, demo_report& report, std::string const& url,
                                                    std::string const& prefix);

}  // namespace redisync::cli
