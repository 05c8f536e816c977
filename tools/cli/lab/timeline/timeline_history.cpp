#include "cli/lab/timeline/timeline_history.hpp"

#include "cli/common/common.hpp"

#include <fmt/core.h>

#include <algorithm>

namespace redisync::cli {

timeline read_timeline(std::vector<std::string> const& histories, std::optional<std::string> const& faults,
                       bool permits) try {
  auto const events = testbed::read_events(histories);
  if (events.empty()) throw std::runtime_error{"the histories hold no event: nothing to draw"};
  timeline out;
  static_cast<testbed::history&>(out) = testbed::follow(events, {.permits = permits, .killed_at = {}});
  if (faults) {
    for (auto const& [line, where] : testbed::json_lines_of(*faults, "faults")) {
      auto const* t = line.if_contains("t_ns");
      auto const* text = line.if_contains("fault");
      if (!t || !t->is_int64() || !text || !text->is_string()) {
        throw usage_error{fmt::format("{}: a fault is {{\"t_ns\": <ns>, \"fault\": \"<text>\"}}", where)};
      }
      out.faults.push_back({t->as_int64(), std::string{text->as_string()}});
    }
    std::stable_sort(out.faults.begin(), out.faults.end(), [](auto const& a, auto const& b) { return a.at_ns < b.at_ns; });
    if (!out.faults.empty()) {
      out.first_ns = std::min(out.first_ns, out.faults.front().at_ns);
      out.last_ns = std::max(out.last_ns, out.faults.back().at_ns);
    }
  }
  return out;
} catch (testbed::history_error const& e) {
  throw usage_error{e.what()};
}

}  // namespace redisync::cli
