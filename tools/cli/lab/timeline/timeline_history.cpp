#include "cli/lab/timeline/timeline_history.hpp"

#include "cli/common/common.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <tuple>

namespace redisync::cli {

namespace {

namespace json = boost::json;

// A line of a JSON-lines file and where it is, for the messages that refuse it.
struct located_line {
  json::object object;
  std::string where;  // file:line
};

std::vector<located_line> json_lines_of(std::string const& path, std::string_view what) {
  if (std::filesystem::is_directory(path)) {
    throw usage_error{fmt::format("cannot read the {} file '{}': it is a directory", what, path)};
  }
  std::ifstream in{path};
  if (!in.is_open()) throw usage_error{fmt::format("cannot read the {} file '{}': {}", what, path, std::strerror(errno))};
  std::vector<located_line> out;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    bool const last_without_newline = in.eof();
    json::error_code ec;
    auto parsed = json::parse(line, ec);
    if (!ec && parsed.is_object()) {
      out.push_back({std::move(parsed.as_object()), fmt::format("{}:{}", path, number)});
    } else if (!last_without_newline) {
      throw usage_error{fmt::format("{}:{}: not a JSON object{}", path, number, ec ? ": " + ec.message() : "")};
    }
  }
  if (in.bad()) throw usage_error{fmt::format("cannot read the {} file '{}': {}", what, path, std::strerror(errno))};
  return out;
}

template <class Number>
std::optional<Number> number_if(located_line const& l, std::string_view key) {
  auto const* v = l.object.if_contains(key);
  if (!v) return std::nullopt;
  json::error_code ec;
  auto const n = v->to_number<Number>(ec);
  if (ec) throw usage_error{fmt::format("{}: \"{}\" is not a whole number", l.where, key)};
  return n;
}

template <class Number>
Number number(located_line const& l, std::string_view key) {
  auto const n = number_if<Number>(l, key);
  if (!n) throw usage_error{fmt::format("{}: no \"{}\"", l.where, key)};
  return *n;
}

std::string text(located_line const& l, std::string_view key, bool required = true) {
  auto const* v = l.object.if_contains(key);
  if (v && v->is_string()) return std::string{v->get_string()};
  if (v || required) throw usage_error{fmt::format("{}: \"{}\" is not a string", l.where, key)};
  return {};
}

struct history_event {
  std::int64_t t_ns = 0, pid = 0;
  std::string event, owner, name, detail;
  std::uint64_t token = 0;
  std::optional<std::int64_t> valid_until_ns, value;
};

history_event event_of(located_line const& l) {
  return {.t_ns = number<std::int64_t>(l, "t_ns"),
          .pid = number<std::int64_t>(l, "pid"),
          .event = text(l, "event"),
          .owner = text(l, "owner"),
          .name = text(l, "name", false),
          .detail = text(l, "detail", false),
          .token = number<std::uint64_t>(l, "token"),
          .valid_until_ns = number_if<std::int64_t>(l, "valid_until_ns"),
          .value = number_if<std::int64_t>(l, "value")};
}

// Lanes by pid, then by their first event: the workers of one process side by side.
std::map<std::pair<std::int64_t, std::string>, std::size_t> place_lanes(std::vector<history_event> const& events,
                                                                        timeline& out) {
  std::map<std::pair<std::int64_t, std::string>, std::int64_t> first;
  for (auto const& e : events) first.try_emplace({e.pid, e.owner}, e.t_ns);
  std::vector<std::tuple<std::int64_t, std::int64_t, std::string>> order;
  for (auto const& [key, t] : first) order.emplace_back(key.first, t, key.second);
  std::sort(order.begin(), order.end());
  std::map<std::pair<std::int64_t, std::string>, std::size_t> index;
  for (auto const& [pid, t, owner] : order) {
    index[{pid, owner}] = out.lanes.size();
    out.lanes.push_back({pid, owner});
  }
  return index;
}

constexpr auto no_deadline = std::numeric_limits<std::int64_t>::max();

// Follows each lane's events in order: holds from `acquired` to `released` or `lost` (per name: a
// multi-lock holds several at once), waits from `wait` to the grant or the failure (a latch's from
// `counted_down` to `opened`), fenced writes from `writing` to their outcome.
void follow(std::vector<history_event> const& events, timeline& out) {
  auto const lane_of = place_lanes(events, out);
  std::map<std::size_t, std::int64_t> waiting;                               // lane -> since
  std::map<std::pair<std::size_t, std::string>, std::size_t> open;          // (lane, name) -> hold
  std::map<std::tuple<std::size_t, std::string, std::uint64_t>, std::size_t> in_flight;  // -> write
  for (auto const& e : events) {
    auto const lane = lane_of.at({e.pid, e.owner});
    auto const hold = open.find({lane, e.name});
    auto const write = in_flight.find({lane, e.name, e.token});
    auto const mark = [&](mark_kind kind) {
      auto text = fmt::format("{} (token {})", e.event, e.token);
      if (!e.detail.empty()) text += ": " + e.detail;
      out.marks.push_back({lane, e.t_ns, kind, std::move(text)});
    };
    auto const stop_waiting = [&] {
      if (auto const w = waiting.find(lane); w != waiting.end()) {
        out.waits.push_back({lane, w->second, e.t_ns});
        waiting.erase(w);
      }
    };
    auto const settle = [&](write_outcome outcome) {
      if (write == in_flight.end()) return;
      out.writes[write->second].outcome = outcome;
      in_flight.erase(write);
    };
    if (e.event == "wait" || e.event == "counted_down") {
      waiting.try_emplace(lane, e.t_ns);
    } else if (e.event == "acquired") {
      stop_waiting();
      auto const kind = out.permits ? hold_kind::permit : e.token == 0 ? hold_kind::read : hold_kind::exclusive;
      open[{lane, e.name}] = out.holds.size();
      out.holds.push_back({.lane = lane, .name = e.name, .kind = kind, .token = e.token, .acquired_ns = e.t_ns,
                           .releasing_ns = {}, .ended_ns = {}, .lost = false,
                           .window_end_ns = e.valid_until_ns.value_or(no_deadline)});
    } else if (e.event == "opened") {
      stop_waiting();
    } else if (e.event == "writing") {
      in_flight[{lane, e.name, e.token}] = out.writes.size();
      out.writes.push_back({e.name, e.value.value_or(0), write_outcome::unknown});
      // The watchdog may have moved the deadline on since the grant.
      if (hold != open.end() && e.valid_until_ns) out.holds[hold->second].window_end_ns = *e.valid_until_ns;
    } else if (e.event == "write_accepted") {
      settle(write_outcome::accepted);
    } else if (e.event == "write_rejected") {
      settle(write_outcome::rejected);
      mark(mark_kind::rejected);
    } else if (e.event == "write_failed" || e.event == "write_unknown") {
      settle(e.event == "write_failed" ? write_outcome::failed : write_outcome::unknown);
      mark(mark_kind::error);
    } else if (e.event == "releasing" && hold != open.end()) {
      auto& h = out.holds[hold->second];
      h.releasing_ns = e.t_ns;
      h.window_end_ns = std::min(e.t_ns, e.valid_until_ns.value_or(h.window_end_ns));
    } else if (e.event == "released" || e.event == "lost") {
      if (hold != open.end()) {
        out.holds[hold->second].ended_ns = e.t_ns;
        out.holds[hold->second].lost = e.event == "lost";
        open.erase(hold);
      }
      if (e.event == "lost") mark(mark_kind::lost);
    } else if (e.event == "error" || e.event == "release_failed") {
      stop_waiting();  // an acquire (or a latch's wait) that failed
      mark(mark_kind::error);
    } else if (e.event == "over_limit" || e.event == "changed_under_read") {
      mark(mark_kind::flagged);
    }
  }
  for (auto const& [lane, since] : waiting) out.waits.push_back({lane, since, out.last_ns});
  // Without a deadline in the lines, the window is what the events show.
  for (auto& h : out.holds) {
    if (h.window_end_ns == no_deadline) h.window_end_ns = h.releasing_ns.value_or(h.ended_ns.value_or(out.last_ns));
  }
}

}  // namespace

timeline read_timeline(std::vector<std::string> const& histories, std::optional<std::string> const& faults,
                       bool permits) {
  timeline out;
  out.permits = permits;
  std::vector<history_event> events;
  for (auto const& file : histories) {
    for (auto const& line : json_lines_of(file, "history")) events.push_back(event_of(line));
  }
  if (events.empty()) throw std::runtime_error{"the histories hold no event: nothing to draw"};
  // Processes appending to one file interleave their lines a little; one process's lines are in
  // the order of its clock, which a stable sort keeps.
  std::stable_sort(events.begin(), events.end(), [](auto const& a, auto const& b) { return a.t_ns < b.t_ns; });
  out.first_ns = events.front().t_ns;
  out.last_ns = events.back().t_ns;
  if (faults) {
    for (auto const& line : json_lines_of(*faults, "faults")) {
      out.faults.push_back({number<std::int64_t>(line, "t_ns"), text(line, "fault")});
    }
    std::stable_sort(out.faults.begin(), out.faults.end(), [](auto const& a, auto const& b) { return a.at_ns < b.at_ns; });
    if (!out.faults.empty()) {
      out.first_ns = std::min(out.first_ns, out.faults.front().at_ns);
      out.last_ns = std::max(out.last_ns, out.faults.back().at_ns);
    }
  }
  follow(events, out);
  return out;
}

}  // namespace redisync::cli
