#pragma once

// What `redisync timeline` draws: the histories of `redisync stress --history` as the test bed
// reads them (testbed/history.hpp: lanes, holds with their validity windows, waits, marks, writes),
// and the faults of the run.

#include "testbed/history.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace redisync::cli {

using testbed::hold_kind;
using testbed::mark_kind;

struct timeline_fault {
  std::int64_t at_ns = 0;
  std::string text;
};

struct timeline : testbed::history {
  std::vector<timeline_fault> faults;  // first_ns and last_ns cover them too
};

// Reads `histories` (any number of files, each of any number of processes) and `faults` (JSON
// lines of {"t_ns": <CLOCK_MONOTONIC ns, the histories' clock>, "fault": "<text>"}). A file that
// cannot be read, or a line that is not such an event, is a usage_error naming the file (and the
// line); a last line without its newline that does not parse is skipped: its writer was killed.
timeline read_timeline(std::vector<std::string> const& histories, std::optional<std::string> const& faults,
                       bool permits);

}  // namespace redisync::cli
