#include "cli/lab/timeline/timeline_checks.hpp"

#include "testbed/history_checks.hpp"

#include <fmt/core.h>

namespace redisync::cli {

namespace {

std::string holds_line(timeline const& t, testbed::history_report const& r) {
  std::int64_t rejected = 0, errors = 0, flagged = 0;
  for (auto const& m : t.marks) {
    rejected += m.kind == mark_kind::rejected;
    errors += m.kind == mark_kind::error;
    flagged += m.kind == mark_kind::flagged;
  }
  auto const kinds = t.permits ? std::string{"every hold taken as a permit (--permits)"}
                               : std::string{"token 0 taken as a read, any other as exclusive"};
  return fmt::format("holds: {} ({} reads, {} exclusive, {} permits; {}) in {} lanes; {} lost, {} refused writes, "
                     "{} errors, {} flagged by stress (over_limit, changed_under_read)",
                     r.holds, r.reads, r.exclusive, r.permits, kinds, t.lanes.size(), r.lost, rejected, errors, flagged);
}

std::string overlaps_line(timeline const& t, testbed::history_report const& r) {
  if (t.permits) return "overlaps: not checked: permits are held many at once by design";
  return fmt::format("overlaps: {} (pairs of holds of one lock from different owners, at least one exclusive, whose "
                     "windows from grant to release sent, or to the deadline, intersect; reads may overlap reads)",
                     r.overlaps);
}

std::string tokens_line(testbed::history_report const& r) {
  if (r.exclusive == 0) return "tokens: not checked: no exclusive holds (reads and permits are shared)";
  return fmt::format("tokens: {} falls in {} exclusive holds (a token not above the one granted before it, per lock)",
                     r.token_falls, r.exclusive);
}

std::string counter_line(std::string const& name, testbed::counter_report const& c) {
  auto const label = name.empty() ? std::string{"counter"} : fmt::format("counter of {}", name);
  auto const others = fmt::format("{} rejected, {} failed, {} with an unknown outcome", c.rejected, c.failed, c.unknown);
  if (c.accepted == 0) return fmt::format("{}: no accepted writes; {}", label, others);
  auto const verdict = c.twice == 0 && c.missing == 0
                           ? std::string{"each written once"}
                           : fmt::format("{} written more than once, {} never written", c.twice, c.missing);
  return fmt::format("{}: {} accepted writes, highest value {}: values {}..{} {}; {}", label, c.accepted, c.highest,
                     c.lowest, c.highest, verdict, others);
}

}  // namespace

timeline_checks check_timeline(timeline const& t) {
  auto const report = testbed::check_history(t);
  timeline_checks out;
  out.overlapping = report.overlapping;
  out.caption.push_back(holds_line(t, report));
  out.caption.push_back(overlaps_line(t, report));
  out.caption.push_back(tokens_line(report));
  bool fenced = false;
  for (auto const& [name, counter] : report.counters) {
    if (!counter.checked) continue;
    fenced = true;
    out.caption.push_back(counter_line(name, counter));
  }
  if (!fenced) {
    out.caption.push_back("counter: not checked: no fenced writes in the histories (stress logs its writes only "
                          "with --fence-key)");
  }
  for (auto const& p : report.problems) out.caption.push_back("history: " + p);
  return out;
}

}  // namespace redisync::cli
