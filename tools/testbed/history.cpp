#include "testbed/history.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <tuple>

namespace redisync::testbed {

namespace {

namespace json = boost::json;

template <class Number>
std::optional<Number> number_if(json::object const& line, std::string const& where, std::string_view key) {
  auto const* v = line.if_contains(key);
  if (!v) return std::nullopt;
  json::error_code ec;
  auto const n = v->to_number<Number>(ec);
  if (ec) throw history_error{fmt::format("{}: \"{}\" is not a whole number", where, key)};
  return n;
}

template <class Number>
Number number(json::object const& line, std::string const& where, std::string_view key) {
  auto const n = number_if<Number>(line, where, key);
  if (!n) throw history_error{fmt::format("{}: no \"{}\"", where, key)};
  return *n;
}

std::string text(json::object const& line, std::string const& where, std::string_view key, bool required = true) {
  auto const* v = line.if_contains(key);
  if (v && v->is_string()) return std::string{v->get_string()};
  if (v || required) throw history_error{fmt::format("{}: \"{}\" is not a string", where, key)};
  return {};
}

// Lanes by pid, then by their first event: the workers of one process side by side.
std::map<std::pair<std::int64_t, std::string>, std::size_t> place_lanes(std::vector<history_event> const& events,
                                                                        history& out) {
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
// `counted_down` to `opened`), writes from `writing` to their outcome.
class follower {
 public:
  follower(history& out, reading const& how) : out_{out}, how_{how} {}

  void take(std::vector<history_event> const& events) {
    lane_of_ = place_lanes(events, out_);
    for (auto const& e : events) take(e);
    end();
  }

 private:
  void take(history_event const& e) {
    auto const lane = lane_of_.at({e.pid, e.owner});
    auto const hold = open_.find({lane, e.name});
    if (e.event == "wait" || e.event == "counted_down") {
      waiting_.try_emplace(lane, e.t_ns);
    } else if (e.event == "acquired") {
      grant(e, lane, hold);
    } else if (e.event == "opened") {
      stop_waiting(lane, e.t_ns);
    } else if (e.event == "writing") {
      in_flight_[{lane, e.name, e.token}] = out_.writes.size();
      out_.writes.push_back({e.name, e.value.value_or(0), write_outcome::unknown});
      // The watchdog may have moved the deadline on since the grant.
      if (hold != open_.end() && e.valid_until_ns) out_.holds[hold->second].window_end_ns = *e.valid_until_ns;
    } else if (e.event == "write_accepted") {
      settle(e, lane, write_outcome::accepted);
    } else if (e.event == "write_rejected") {
      settle(e, lane, write_outcome::rejected);
      mark(e, lane, mark_kind::rejected);
    } else if (e.event == "write_failed" || e.event == "write_unknown") {
      settle(e, lane, e.event == "write_failed" ? write_outcome::failed : write_outcome::unknown);
      mark(e, lane, mark_kind::error);
    } else if (e.event == "releasing" && hold != open_.end()) {
      auto& h = out_.holds[hold->second];
      h.releasing_ns = e.t_ns;
      h.window_end_ns = std::min(e.t_ns, e.valid_until_ns.value_or(h.window_end_ns));
    } else if (e.event == "released" || e.event == "lost") {
      end_hold(e, lane, hold);
    } else if (e.event == "error" || e.event == "release_failed") {
      stop_waiting(lane, e.t_ns);  // an acquire (or a latch's wait) that failed
      mark(e, lane, mark_kind::error);
    } else if (e.event == "over_limit" || e.event == "changed_under_read") {
      mark(e, lane, mark_kind::flagged);
    }
  }

  using open_holds = std::map<std::pair<std::size_t, std::string>, std::size_t>;

  void grant(history_event const& e, std::size_t lane, open_holds::iterator hold) {
    stop_waiting(lane, e.t_ns);
    if (hold != open_.end()) {
      auto const& before = out_.holds[hold->second];
      problem(before.token == e.token
                  ? fmt::format("token {} granted twice to {}", e.token, e.owner)
                  : fmt::format("{} granted token {} before its hold of token {} ended", e.owner, e.token, before.token));
    }
    auto const kind = out_.permits ? hold_kind::permit : e.token == 0 ? hold_kind::read : hold_kind::exclusive;
    open_[{lane, e.name}] = out_.holds.size();
    out_.holds.push_back({.lane = lane, .name = e.name, .kind = kind, .token = e.token, .acquired_ns = e.t_ns,
                          .releasing_ns = {}, .ended_ns = {}, .lost = false,
                          .window_end_ns = e.valid_until_ns.value_or(no_deadline)});
  }

  void end_hold(history_event const& e, std::size_t lane, open_holds::iterator hold) {
    if (e.event == "lost") mark(e, lane, mark_kind::lost);
    if (hold == open_.end()) {
      return problem(fmt::format("a hold of {} (token {}) {} without being granted, or a second time", e.owner,
                                 e.token, e.event));
    }
    auto& h = out_.holds[hold->second];
    if (!h.releasing_ns) {
      problem(fmt::format("a hold of {} (token {}) {} before its release was sent", e.owner, e.token, e.event));
    }
    h.ended_ns = e.t_ns;
    h.lost = e.event == "lost";
    open_.erase(hold);
  }

  void mark(history_event const& e, std::size_t lane, mark_kind kind) {
    auto text = fmt::format("{} (token {})", e.event, e.token);
    if (!e.detail.empty()) text += ": " + e.detail;
    out_.marks.push_back({lane, e.t_ns, kind, std::move(text)});
  }

  void stop_waiting(std::size_t lane, std::int64_t t) {
    if (auto const w = waiting_.find(lane); w != waiting_.end()) {
      out_.waits.push_back({lane, w->second, t});
      waiting_.erase(w);
    }
  }

  void settle(history_event const& e, std::size_t lane, write_outcome outcome) {
    auto const write = in_flight_.find({lane, e.name, e.token});
    if (write == in_flight_.end()) {
      // No value logged first: a leased permit's INCR, counted but not checked against a counter.
      out_.writes.push_back({e.name, std::nullopt, outcome});
      return;
    }
    out_.writes[write->second].outcome = outcome;
    in_flight_.erase(write);
  }

  // What is still open when the histories end: a killed process's holds lasted until its death at
  // most, and its writes in flight may have run; anything else open is a problem.
  void end() {
    for (auto const& [lane, since] : waiting_) out_.waits.push_back({lane, since, out_.last_ns});
    for (auto const& [key, index] : open_) {
      auto& h = out_.holds[index];
      auto const& l = out_.lanes[h.lane];
      if (auto const killed = how_.killed_at.find(l.pid); killed != how_.killed_at.end()) {
        if (!h.releasing_ns) h.window_end_ns = std::min(h.window_end_ns, killed->second);
      } else {
        problem(fmt::format("a hold of {} (token {}) never ended", l.owner, h.token));
      }
    }
    for (auto const& [key, index] : in_flight_) {
      if (!how_.killed_at.contains(out_.lanes[std::get<0>(key)].pid)) {
        problem(fmt::format("a write of {} had no outcome in a process that was not killed",
                            out_.writes[index].value.value_or(0)));
      }
    }
    // Without a deadline in the lines, the window is what the events show.
    for (auto& h : out_.holds) {
      if (h.window_end_ns == no_deadline) h.window_end_ns = h.releasing_ns.value_or(h.ended_ns.value_or(out_.last_ns));
    }
  }

  void problem(std::string text) { out_.problems.push_back(std::move(text)); }

  history& out_;
  reading const& how_;
  std::map<std::pair<std::int64_t, std::string>, std::size_t> lane_of_;
  std::map<std::size_t, std::int64_t> waiting_;  // lane -> since
  open_holds open_;                              // (lane, name) -> hold
  std::map<std::tuple<std::size_t, std::string, std::uint64_t>, std::size_t> in_flight_;  // -> write
};

}  // namespace

history_event event_of(json::object const& line, std::string const& where) {
  return {.t_ns = number<std::int64_t>(line, where, "t_ns"),
          .pid = number<std::int64_t>(line, where, "pid"),
          .event = text(line, where, "event"),
          .owner = text(line, where, "owner"),
          .name = text(line, where, "name", false),
          .detail = text(line, where, "detail", false),
          .token = number<std::uint64_t>(line, where, "token"),
          .valid_until_ns = number_if<std::int64_t>(line, where, "valid_until_ns"),
          .value = number_if<std::int64_t>(line, where, "value")};
}

std::vector<std::pair<json::object, std::string>> json_lines_of(std::string const& path, std::string_view what) {
  if (std::filesystem::is_directory(path)) {
    throw history_error{fmt::format("cannot read the {} file '{}': it is a directory", what, path)};
  }
  std::ifstream in{path};
  if (!in.is_open()) {
    throw history_error{fmt::format("cannot read the {} file '{}': {}", what, path, std::strerror(errno))};
  }
  std::vector<std::pair<json::object, std::string>> out;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    bool const last_without_newline = in.eof();
    json::error_code ec;
    auto parsed = json::parse(line, ec);
    if (!ec && parsed.is_object()) {
      out.emplace_back(std::move(parsed.as_object()), fmt::format("{}:{}", path, number));
    } else if (!last_without_newline) {
      throw history_error{fmt::format("{}:{}: not a JSON object{}", path, number, ec ? ": " + ec.message() : "")};
    }
  }
  if (in.bad()) throw history_error{fmt::format("cannot read the {} file '{}': {}", what, path, std::strerror(errno))};
  return out;
}

std::vector<history_event> read_events(std::vector<std::string> const& files) {
  std::vector<history_event> events;
  for (auto const& file : files) {
    for (auto const& [line, where] : json_lines_of(file, "history")) events.push_back(event_of(line, where));
  }
  // Processes appending to one file interleave their lines a little; one process's lines are in
  // the order of its clock, which a stable sort keeps.
  std::stable_sort(events.begin(), events.end(), [](auto const& a, auto const& b) { return a.t_ns < b.t_ns; });
  return events;
}

history follow(std::vector<history_event> const& events, reading const& how) {
  history out;
  out.permits = how.permits;
  if (!events.empty()) {
    out.first_ns = events.front().t_ns;
    out.last_ns = events.back().t_ns;
  }
  follower{out, how}.take(events);
  return out;
}

}  // namespace redisync::testbed
