#pragma once

// What `redisync timeline` draws, read from the histories of `redisync stress --history` (history_log
// in stress.hpp): one lane per (pid, owner), the holds with their validity windows, the waits, the
// marks (losses, refused writes, errors, what stress itself flagged) and the fenced writes.
//
// A history line does not say which kind of stress wrote it. The kind of a hold is taken from its
// token: a read hold of a read-write lock carries token 0 (read_write_lock.hpp), every exclusive
// hold a fencing token above 0. Permits carry tokens too (a Redisson semaphore's, 0), so histories
// of --kind semaphore, permits or fair-permits are told apart only by the caller (`permits`).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace redisync::cli {

enum class hold_kind { read, exclusive, permit };

struct timeline_hold {
  std::size_t lane = 0;
  std::string name;  // a multi-lock member's name; empty for the one lock of a history
  hold_kind kind = hold_kind::exclusive;
  std::uint64_t token = 0;
  std::int64_t acquired_ns = 0;
  std::optional<std::int64_t> releasing_ns;  // when the worker let go
  std::optional<std::int64_t> ended_ns;      // released or lost; none: still open when its history ends
  bool lost = false;
  // Until when the hold was certainly held: from the grant (before `acquired` was logged) to the
  // release being sent, or to the hold's last deadline logged if that came first. Two windows that
  // intersect are two holds at once on the server, whatever the delays of logging.
  std::int64_t window_end_ns = 0;
};

struct timeline_wait {
  std::size_t lane = 0;
  std::int64_t from_ns = 0, to_ns = 0;
};

enum class mark_kind { lost, rejected, error, flagged };

struct timeline_mark {
  std::size_t lane = 0;
  std::int64_t at_ns = 0;
  mark_kind kind = mark_kind::error;
  std::string text;  // the event and its detail, for the mark's tooltip
};

// A fenced write of counter + 1: the value it wrote and how it ended (failed: it did not run;
// unknown: its reply was lost, or its process ended first, so it may have run).
enum class write_outcome { accepted, rejected, failed, unknown };
struct timeline_write {
  std::string name;
  std::int64_t value = 0;
  write_outcome outcome = write_outcome::unknown;
};

struct timeline_lane {
  std::int64_t pid = 0;
  std::string owner;
};

struct timeline_fault {
  std::int64_t at_ns = 0;
  std::string text;
};

struct timeline {
  std::vector<timeline_lane> lanes;  // by pid, then by first event
  std::vector<timeline_hold> holds;  // by grant
  std::vector<timeline_wait> waits;
  std::vector<timeline_mark> marks;
  std::vector<timeline_write> writes;  // in the order they were logged; a write in flight at the end is unknown
  std::vector<timeline_fault> faults;
  std::int64_t first_ns = 0, last_ns = 0;  // of every event and fault
  bool permits = false;                    // every hold is a permit (the caller said so)
};

// Reads `histories` (any number of files, each of any number of processes) and `faults` (JSON
// lines of {"t_ns": <CLOCK_MONOTONIC ns, the histories' clock>, "fault": "<text>"}). A file that
// cannot be read, or a line that is not such an event, is a usage_error naming the file (and the
// line); a last line without its newline that does not parse is skipped: its writer was killed.
timeline read_timeline(std::vector<std::string> const& histories, std::optional<std::string> const& faults,
                       bool permits);

}  // namespace redisync::cli
