#pragma once

// The checks made from the histories of stress processes, by the tests (which assert on them) and
// by `redisync timeline` (which prints them under its picture):
//   - every hold ended once, `released` or `lost` (history::problems lists what did not);
//   - overlaps: pairs of holds of one name, from different lanes and at least one of them
//     exclusive, whose validity windows intersect. Reads may overlap reads; permits are not
//     checked (many at once is their point: stress flags a count past the limit);
//   - tokens: each exclusive hold's fencing token is above the one granted before it, per name;
//   - counters: the values of the accepted fenced writes of a name (each writes counter + 1) are
//     a run with no value twice and none missing, but for writes that may have run. With the
//     counter's final value, the run is 1 to that value.

#include "testbed/history.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace redisync::testbed {

struct counter_report {
  std::int64_t accepted = 0, rejected = 0, failed = 0, unknown = 0;  // writes of every kind
  std::int64_t lowest = 0, highest = 0;  // of the accepted values, if any
  std::int64_t twice = 0;    // accepted values written more than once
  std::int64_t missing = 0;  // values of the run no write wrote, nor may have
  std::int64_t beyond = 0;   // accepted values past the final counter
  bool checked = false;      // some write logged its value
};

struct history_report {
  std::int64_t holds = 0, reads = 0, exclusive = 0, permits = 0, released = 0, lost = 0;
  std::int64_t overlaps = 0;        // pairs
  std::set<std::size_t> overlapping;  // holds in an overlap
  std::optional<std::string> first_overlap;
  std::int64_t token_falls = 0;
  std::optional<std::string> first_fall;
  std::map<std::string, counter_report> counters;  // by name ("" for the one lock of a history)
  std::vector<std::string> problems;               // history::problems
};

// `final_counters`: the counter's value at the end, by name, where it is known.
history_report check_history(history const& h, std::map<std::string, std::int64_t> const& final_counters = {});

}  // namespace redisync::testbed
