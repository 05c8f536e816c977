#include "testbed/history_checks.hpp"

#include <fmt/core.h>

#include <algorithm>

namespace redisync::testbed {

namespace {

// The holds of `h`, per name, in the order they were granted.
std::map<std::string, std::vector<std::size_t>> holds_per_name(history const& h) {
  std::map<std::string, std::vector<std::size_t>> out;
  for (std::size_t i = 0; i < h.holds.size(); ++i) out[h.holds[i].name].push_back(i);
  return out;
}

void count_holds(history const& h, history_report& out) {
  for (auto const& hold : h.holds) {
    ++out.holds;
    ++(hold.kind == hold_kind::read ? out.reads : hold.kind == hold_kind::exclusive ? out.exclusive : out.permits);
    if (hold.ended_ns) ++(hold.lost ? out.lost : out.released);
  }
}

// Sweeps each name's holds in order of grant, keeping those whose window is still open.
void find_overlaps(history const& h, std::map<std::string, std::vector<std::size_t>> const& by_name,
                   history_report& out) {
  if (h.permits) return;
  for (auto const& [name, holds] : by_name) {
    std::vector<std::size_t> open;
    for (auto const i : holds) {
      auto const& hold = h.holds[i];
      std::erase_if(open, [&](std::size_t j) { return h.holds[j].window_end_ns <= hold.acquired_ns; });
      for (auto const j : open) {
        auto const& other = h.holds[j];
        bool const exclusive = hold.kind == hold_kind::exclusive || other.kind == hold_kind::exclusive;
        if (!exclusive || other.lane == hold.lane || hold.window_end_ns <= hold.acquired_ns) continue;
        if (out.overlaps++ == 0) {
          out.first_overlap = fmt::format("token {} granted {} µs inside the validity window of token {}", hold.token,
                                          (other.window_end_ns - hold.acquired_ns) / 1000, other.token);
        }
        out.overlapping.insert({i, j});
      }
      open.push_back(i);
    }
  }
}

void find_token_falls(history const& h, std::map<std::string, std::vector<std::size_t>> const& by_name,
                      history_report& out) {
  for (auto const& [name, holds] : by_name) {
    std::optional<std::uint64_t> previous;
    for (auto const i : holds) {
      auto const& hold = h.holds[i];
      if (hold.kind != hold_kind::exclusive) continue;
      if (previous && hold.token <= *previous && out.token_falls++ == 0) {
        out.first_fall = fmt::format("token {} after {}", hold.token, *previous);
      }
      previous = hold.token;
    }
  }
}

counter_report check_counter(history const& h, std::string const& name, std::optional<std::int64_t> final_value) {
  counter_report out;
  std::vector<std::int64_t> accepted;
  std::set<std::int64_t> may_have_run;
  for (auto const& w : h.writes) {
    if (w.name != name) continue;
    switch (w.outcome) {
      case write_outcome::accepted: ++out.accepted; break;
      case write_outcome::rejected: ++out.rejected; break;
      case write_outcome::failed: ++out.failed; break;
      case write_outcome::unknown: ++out.unknown; break;
    }
    if (!w.value) continue;
    out.checked = true;
    if (w.outcome == write_outcome::accepted) accepted.push_back(*w.value);
    if (w.outcome == write_outcome::unknown) may_have_run.insert(*w.value);
  }
  std::sort(accepted.begin(), accepted.end());
  std::set<std::int64_t> written{accepted.begin(), accepted.end()};
  out.twice = static_cast<std::int64_t>(accepted.size() - written.size());
  if (!accepted.empty()) {
    out.lowest = accepted.front();
    out.highest = accepted.back();
  }
  if (final_value) {
    out.beyond = std::count_if(accepted.begin(), accepted.end(), [&](std::int64_t v) { return v > *final_value; });
  }
  auto const lo = final_value ? std::int64_t{1} : out.lowest;
  auto const hi = final_value ? *final_value : out.highest;
  if (!final_value && accepted.empty()) return out;
  // A value no accepted write wrote is missing, unless a write that may have run wrote it.
  for (auto v = lo; v <= hi; ++v) {
    if (!written.contains(v) && !may_have_run.contains(v)) ++out.missing;
  }
  return out;
}

}  // namespace

history_report check_history(history const& h, std::map<std::string, std::int64_t> const& final_counters) {
  history_report out;
  auto const by_name = holds_per_name(h);
  count_holds(h, out);
  find_overlaps(h, by_name, out);
  find_token_falls(h, by_name, out);
  std::set<std::string> names;
  for (auto const& w : h.writes) names.insert(w.name);
  for (auto const& [name, value] : final_counters) names.insert(name);
  for (auto const& name : names) {
    auto const final_value = final_counters.find(name);
    out.counters[name] =
        check_counter(h, name, final_value != final_counters.end() ? std::optional{final_value->second} : std::nullopt);
  }
  out.problems = h.problems;
  return out;
}

}  // namespace redisync::testbed
