#pragma once

// The checks `redisync timeline` prints under its picture: the test bed's (testbed/history_checks.hpp),
// one caption line each, computed from the histories alone. Each line says what it checked, so
// that "0" never stands for "not looked at".

#include "cli/lab/timeline/timeline_history.hpp"

#include <set>
#include <string>
#include <vector>

namespace redisync::cli {

struct timeline_checks {
  std::vector<std::string> caption;  // one line per check
  std::set<std::size_t> overlapping;  // holds in an overlap: outlined in the picture
};

timeline_checks check_timeline(timeline const& t);

}  // namespace redisync::cli
