#include "cli/lab/timeline/timeline_checks.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <optional>

namespace redisync::cli {

namespace {

// The holds of `t`, per lock name, in the order they were granted.
std::map<std::string, std::vector<std::size_t>> holds_per_name(timeline const& t) {
  std::map<std::string, std::vector<std::size_t>> out;
  for (std::size_t i = 0; i < t.holds.size(); ++i) out[t.holds[i].name].push_back(i);
  return out;
}

std::string holds_line(timeline const& t) {
  std::int64_t reads = 0, exclusive = 0, permits = 0, lost = 0, rejected = 0, errors = 0, flagged = 0;
  for (auto const& h : t.holds) {
    ++(h.kind == hold_kind::read ? reads : h.kind == hold_kind::exclusive ? exclusive : permits);
    lost += h.lost;
  }
  for (auto const& m : t.marks) {
    rejected += m.kind == mark_kind::rejected;
    errors += m.kind == mark_kind::error;
    flagged += m.kind == mark_kind::flagged;
  }
  auto const kinds = t.permits ? std::string{"every hold taken as a permit (--permits)"}
                               : std::string{"token 0 taken as a read, any other as exclusive"};
  return fmt::format("holds: {} ({} reads, {} exclusive, {} permits; {}) in {} lanes; {} lost, {} refused writes, "
                     "{} errors, {} flagged by stress (over_limit, changed_under_read)",
                     t.holds.size(), reads, exclusive, permits, kinds, t.lanes.size(), lost, rejected, errors, flagged);
}

// Sweeps each lock's holds in order of grant, keeping those whose window is still open.
std::string overlaps_line(timeline const& t, std::set<std::size_t>& overlapping) {
  if (t.permits) return "overlaps: not checked: permits are held many at once by design";
  std::int64_t pairs = 0;
  for (auto const& [name, holds] : holds_per_name(t)) {
    std::vector<std::size_t> open;
    for (auto const i : holds) {
      auto const& h = t.holds[i];
      std::erase_if(open, [&](std::size_t j) { return t.holds[j].window_end_ns <= h.acquired_ns; });
      for (auto const j : open) {
        auto const& other = t.holds[j];
        bool const exclusive = h.kind == hold_kind::exclusive || other.kind == hold_kind::exclusive;
        if (!exclusive || other.lane == h.lane || h.window_end_ns <= h.acquired_ns) continue;
        ++pairs;
        overlapping.insert({i, j});
      }
      open.push_back(i);
    }
  }
  return fmt::format("overlaps: {} (pairs of holds of one lock from different owners, at least one exclusive, whose "
                     "windows from grant to release sent, or to the deadline, intersect; reads may overlap reads)",
                     pairs);
}

std::string tokens_line(timeline const& t) {
  std::int64_t exclusive = 0, falls = 0;
  for (auto const& [name, holds] : holds_per_name(t)) {
    std::optional<std::uint64_t> previous;
    for (auto const i : holds) {
      auto const& h = t.holds[i];
      if (h.kind != hold_kind::exclusive) continue;
      ++exclusive;
      if (previous && h.token <= *previous) ++falls;
      previous = h.token;
    }
  }
  if (exclusive == 0) return "tokens: not checked: no exclusive holds (reads and permits are shared)";
  return fmt::format("tokens: {} falls in {} exclusive holds (a token not above the one granted before it, per lock)",
                     falls, exclusive);
}

std::string counter_line(std::string const& name, std::vector<timeline_write> const& writes) {
  std::vector<std::int64_t> accepted, may_have_run;
  std::int64_t rejected = 0, failed = 0, unknown = 0;
  for (auto const& w : writes) {
    if (w.name != name) continue;
    switch (w.outcome) {
      case write_outcome::accepted: accepted.push_back(w.value); break;
      case write_outcome::rejected: ++rejected; break;
      case write_outcome::failed: ++failed; break;
      case write_outcome::unknown: ++unknown; may_have_run.push_back(w.value); break;
    }
  }
  auto const label = name.empty() ? std::string{"counter"} : fmt::format("counter of {}", name);
  auto const others = fmt::format("{} rejected, {} failed, {} with an unknown outcome", rejected, failed, unknown);
  if (accepted.empty()) return fmt::format("{}: no accepted writes; {}", label, others);
  std::sort(accepted.begin(), accepted.end());
  auto const lo = accepted.front(), hi = accepted.back();
  auto const twice = static_cast<std::int64_t>(accepted.size() - std::set(accepted.begin(), accepted.end()).size());
  // A value no accepted write wrote is missing, unless a write that may have run wrote it.
  std::set<std::int64_t> written{accepted.begin(), accepted.end()};
  for (auto const v : may_have_run) {
    if (v >= lo && v <= hi) written.insert(v);
  }
  auto const missing = (hi - lo + 1) - static_cast<std::int64_t>(written.size());
  auto const verdict = twice == 0 && missing == 0
                           ? std::string{"each written once"}
                           : fmt::format("{} written more than once, {} never written", twice, missing);
  return fmt::format("{}: {} accepted writes, highest value {}: values {}..{} {}; {}", label, accepted.size(), hi, lo,
                     hi, verdict, others);
}

}  // namespace

timeline_checks check_timeline(timeline const& t) {
  timeline_checks out;
  out.caption.push_back(holds_line(t));
  out.caption.push_back(overlaps_line(t, out.overlapping));
  out.caption.push_back(tokens_line(t));
  if (t.writes.empty()) {
    out.caption.push_back("counter: not checked: no fenced writes in the histories (stress logs its writes only "
                          "with --fence-key)");
  }
  std::set<std::string> names;
  for (auto const& w : t.writes) names.insert(w.name);
  for (auto const& name : names) out.caption.push_back(counter_line(name, t.writes));
  return out;
}

}  // namespace redisync::cli
