#pragma once

// The picture of `redisync timeline`: lanes of holds, waits and marks over time, the faults as
// vertical lines, and the checks as a caption. The same timeline gives the same bytes.

#include "cli/lab/timeline/timeline_checks.hpp"
#include "cli/lab/timeline/timeline_history.hpp"

#include <string>

namespace redisync::cli {

std::string draw_timeline(timeline const& t, timeline_checks const& checks, std::string const& title);

}  // namespace redisync::cli
