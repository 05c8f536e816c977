#pragma once

// The checks `redisync timeline` prints under its picture, computed from the histories alone:
//   - overlaps: pairs of holds of one lock, from different owners and at least one of them
//     exclusive, whose validity windows (timeline_hold) intersect. Reads may overlap reads;
//     permits are not checked (many at once is their point: stress flags a count past the limit);
//   - tokens: each exclusive hold's fencing token is above the one granted before it, per lock;
//   - counter: the values of the accepted fenced writes (each writes counter + 1) are a run with
//     no value twice and none missing, but for writes that may have run.
// Each caption line says what it checked, so that "0" never stands for "not looked at".

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
