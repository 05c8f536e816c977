#pragma once

// The demo's fault sections (demo_faults.cpp): a holder killed, a holder paused past its lease,
// and their picture.

#include "cli/common/common.hpp"
#include "cli/lab/demo/demo_report.hpp"

#include <boost/asio/awaitable.hpp>

#include <string>

namespace redisync::cli {

// Sections 3 and 4. Their names start with `prefix`; their processes reach Redis at `url`.
boost::asio::awaitable<void> fault_sections(client& c, demo_report& report, std::string const& url,
                                            std::string const& prefix);

}  // namespace redisync::cli
