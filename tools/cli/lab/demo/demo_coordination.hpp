#pragma once

// The demo's coordination sections (demo_coordination.cpp): a latch releasing 4 processes at once,
// two processes taking overlapping multi-locks in opposite orders, and a leader election whose
// leader is killed.

#include "cli/common/common.hpp"
#include "cli/lab/demo/demo_report.hpp"

#include <boost/asio/awaitable.hpp>

#include <string>

namespace redisync::cli {

// Their names start with `prefix`; their processes reach Redis at `url`.
boost::asio::awaitable<void> coordination_sections(client& c, demo_report& report, std::string const& url,
                                                   std::string const& prefix);

}  // namespace redisync::cli
