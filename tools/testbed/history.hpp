#pragma once

// What the histories of `redisync stress --history` say (one JSON line per event: history_log in
// the tool's stress.hpp), as one model that the tests check and `redisync timeline` draws: one
// lane per (pid, owner), the holds with their validity windows, the waits, the marks (losses,
// refused writes, errors, what stress itself flagged), the fenced writes, and what a history
// should never show.
//
// A history line does not say which kind of stress wrote it. The kind of a hold is taken from its
// token: a read hold of a read-write lock carries token 0, every exclusive hold a fencing token
// above 0. Permits carry tokens too (a Redisson semaphore's, 0), so histories of --kind semaphore,
// permits or fair-permits are told apart only by the caller (`permits`).

#include <boost/json/object.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace redisync::testbed {

// A history that cannot be read: the text names the file and the line.
struct history_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct history_event {
  std::int64_t t_ns = 0, pid = 0;  // CLOCK_MONOTONIC
  std::string event, owner, name, detail;
  std::uint64_t token = 0;
  std::optional<std::int64_t> valid_until_ns, value;
};

// One line; `where` (file:line) names it in the error if it is no such event.
history_event event_of(boost::json::object const& line, std::string const& where);
// The lines of a JSON-lines file. A last line without its newline that does not parse is skipped:
// its writer was killed.
std::vector<std::pair<boost::json::object, std::string>> json_lines_of(std::string const& path,
                                                                       std::string_view what);
// Every event of the history files, in the order of their clock.
std::vector<history_event> read_events(std::vector<std::string> const& files);

enum class hold_kind { read, exclusive, permit };

struct hold_record {
  std::size_t lane = 0;
  std::string name;  // a multi-lock member's name; empty for the one lock of a history
  hold_kind kind = hold_kind::exclusive;
  std::uint64_t token = 0;
  std::int64_t acquired_ns = 0;
  std::optional<std::int64_t> releasing_ns;  // when the worker let go
  std::optional<std::int64_t> ended_ns;      // released or lost; none: still open when its history ends
  bool lost = false;
  // Until when the hold was certainly held: from the grant (before `acquired` was logged) to the
  // release being sent, or to the hold's last deadline logged if that came first (or to its
  // process's death). Two windows that intersect are two holds at once on the server, whatever
  // the delays of logging.
  std::int64_t window_end_ns = 0;
};

struct wait_record {
  std::size_t lane = 0;
  std::int64_t from_ns = 0, to_ns = 0;
};

enum class mark_kind { lost, rejected, error, flagged };

struct mark_record {
  std::size_t lane = 0;
  std::int64_t at_ns = 0;
  mark_kind kind = mark_kind::error;
  std::string text;  // the event and its detail
};

// A write: a fenced write of counter + 1 logs its value first; a leased permit's INCR does not.
// failed: it did not run; unknown: its reply was lost, or its process ended first, so it may have
// run.
enum class write_outcome { accepted, rejected, failed, unknown };
struct write_record {
  std::string name;
  std::optional<std::int64_t> value;
  write_outcome outcome = write_outcome::unknown;
};

struct lane {
  std::int64_t pid = 0;
  std::string owner;
};

struct history {
  std::vector<lane> lanes;            // by pid, then by first event
  std::vector<hold_record> holds;     // by grant
  std::vector<wait_record> waits;
  std::vector<mark_record> marks;
  std::vector<write_record> writes;   // in the order they were logged
  std::int64_t first_ns = 0, last_ns = 0;
  bool permits = false;               // every hold is a permit (the caller said so)
  // What a history of stress never shows, one sentence each: a token granted twice to one lane,
  // a hold that ended without being granted, or before its release was sent, and, in a process
  // that was not killed, a hold never ended or a write without an outcome.
  std::vector<std::string> problems;
};

struct reading {
  bool permits = false;
  // The processes killed (by pid), and when (CLOCK_MONOTONIC ns): their open holds lasted until
  // then at most, and their writes in flight may have run.
  std::map<std::int64_t, std::int64_t> killed_at;
};

// The model of `events` (in the order of their clock).
history follow(std::vector<history_event> const& events, reading const& how);

}  // namespace redisync::testbed
