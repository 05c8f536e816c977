#include "cli/lab/timeline/timeline_picture.hpp"

#include "cli/lab/timeline/svg.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

namespace redisync::cli {

namespace {

constexpr double width = 1200, plot_left = 340, plot_right = width - 20;
// Text is measured by an estimate: no font is embedded, so the viewer's own decides.
constexpr double char_width = 6.2;  // at 11 px
constexpr double tallest_lanes = 720;  // past this many pixels, lanes get thinner

constexpr char const* exclusive_fill = R"(fill="#3465a4")";
constexpr char const* read_fill = R"(fill="#73b944")";
constexpr char const* permit_fill = R"(fill="#e69f00")";
constexpr char const* fault_stroke = R"(stroke="#d62728" stroke-width="1.2" stroke-dasharray="4 3")";
// A hold its process still believed in after its validity ended (paused past its lease): on the
// server it may be someone else's by then, so it must not look held.
constexpr char const* past_validity = R"(fill-opacity="0.1" stroke="#555555" stroke-width="0.8" stroke-dasharray="3 2")";
constexpr char const* small_text = R"(font-size="11" fill="#333333")";

char const* fill_of(hold_kind k) {
  return k == hold_kind::read ? read_fill : k == hold_kind::permit ? permit_fill : exclusive_fill;
}

struct layout {
  std::int64_t first_ns, span_ns;
  double lanes_top = 0, lane_height = 0;

  double x(std::int64_t t_ns) const {
    return plot_left + double(t_ns - first_ns) / double(span_ns) * (plot_right - plot_left);
  }
  double seconds(std::int64_t t_ns) const { return double(t_ns - first_ns) / 1e9; }
  double lane_top(std::size_t lane) const { return lanes_top + double(lane) * lane_height; }
  double lane_middle(std::size_t lane) const { return lane_top(lane) + lane_height / 2; }
};

// Lost: a cross; a refused write: a triangle; an error: a dot; flagged by stress: a diamond.
void draw_mark(svg_document& svg, mark_kind kind, double x, double y, double s, std::string_view tooltip) {
  auto const at = [](double v) { return svg_number(v); };
  switch (kind) {
    case mark_kind::lost:
      svg.path(fmt::format("M{} {}L{} {}M{} {}L{} {}", at(x - s), at(y - s), at(x + s), at(y + s), at(x - s),
                           at(y + s), at(x + s), at(y - s)),
               R"(stroke="#d62728" stroke-width="2" fill="none")", tooltip);
      break;
    case mark_kind::rejected:
      svg.path(fmt::format("M{} {}L{} {}L{} {}Z", at(x), at(y - s), at(x + s), at(y + s), at(x - s), at(y + s)),
               R"(fill="#ff7f0e" stroke="#000000" stroke-width="0.5")", tooltip);
      break;
    case mark_kind::error: svg.circle(x, y, s * 0.8, R"(fill="#000000")", tooltip); break;
    case mark_kind::flagged:
      svg.path(fmt::format("M{} {}L{} {}L{} {}L{} {}Z", at(x), at(y - s), at(x + s), at(y), at(x), at(y + s),
                           at(x - s), at(y)),
               R"(fill="#c51b8a")", tooltip);
      break;
  }
}

// One row of swatches with their names; returns the height used.
double draw_legend(svg_document& svg, double y) {
  double x = 20;
  auto const item = [&](std::string_view label, auto&& swatch) {
    if (x + 30 + char_width * double(label.size()) > width - 20) {
      x = 20;
      y += 18;
    }
    swatch(x, y);
    svg.text(x + 24, y + 4, label, small_text);
    x += 38 + char_width * double(label.size());
  };
  auto const bar = [&](char const* fill, char const* extra = "") {
    return [&svg, fill, extra](double bx, double by) { svg.rect(bx, by - 5, 18, 10, fmt::format("{} {}", fill, extra)); };
  };
  auto const mark = [&](mark_kind k) { return [&svg, k](double mx, double my) { draw_mark(svg, k, mx + 9, my, 5, {}); }; };
  item("exclusive hold", bar(exclusive_fill));
  item("read hold", bar(read_fill));
  item("permit", bar(permit_fill));
  item("releasing to released", bar(exclusive_fill, R"(fill-opacity="0.35")"));
  item("past its validity (not held)", bar(exclusive_fill, past_validity));
  item("in an overlap", bar(exclusive_fill, R"(stroke="#d62728" stroke-width="2")"));
  item("wait", [&](double lx, double ly) { svg.line(lx, ly, lx + 18, ly, R"(stroke="#888888" stroke-width="1")"); });
  item("lost", mark(mark_kind::lost));
  item("write rejected", mark(mark_kind::rejected));
  item("error", mark(mark_kind::error));
  item("flagged by stress", mark(mark_kind::flagged));
  item("fault", [&](double lx, double ly) { svg.line(lx + 9, ly - 7, lx + 9, ly + 7, fault_stroke); });
  return y + 14;
}

// Each fault's label goes on the first row where it meets no other; returns the rows used.
std::vector<std::size_t> fault_rows(timeline const& t, layout const& at) {
  std::vector<double> row_ends;
  std::vector<std::size_t> rows;
  for (auto const& f : t.faults) {
    double const x = at.x(f.at_ns);
    double const w = char_width * double(f.text.size()) + 8;
    double const from = x + w > width ? x - w : x;  // near the right edge the label goes left of its line
    auto row = std::find_if(row_ends.begin(), row_ends.end(), [&](double end) { return end < from; });
    if (row == row_ends.end()) row = row_ends.insert(row_ends.end(), 0.0);
    *row = from + w;
    rows.push_back(std::size_t(row - row_ends.begin()));
  }
  return rows;
}

void draw_lanes(svg_document& svg, timeline const& t, layout const& at) {
  // Labels at least 10 px apart: with many lanes only every k-th is named (each lane's tooltip
  // names it anyway).
  auto const every = std::size_t(std::ceil(10.0 / at.lane_height));
  double const font = std::min(11.0, at.lane_height * double(every) - 1);
  for (std::size_t i = 0; i < t.lanes.size(); ++i) {
    auto const label = fmt::format("pid {} {}", t.lanes[i].pid, t.lanes[i].owner);
    svg.rect(plot_left, at.lane_top(i), plot_right - plot_left, at.lane_height,
             i % 2 ? R"(fill="#f2f2f2")" : R"(fill="#ffffff")", label);
    if (i % every) continue;
    svg.text(plot_left - 8, at.lane_middle(i) + font * 0.35, label,
             fmt::format(R"(font-size="{}" font-family="DejaVu Sans Mono, monospace" text-anchor="end" fill="#333333")",
                         svg_number(font)));
  }
}

// Ticks at 1, 2 or 5 times a power of ten, about ten of them; light lines across the lanes.
void draw_axis(svg_document& svg, layout const& at, double lanes_bottom) {
  double const span_s = double(at.span_ns) / 1e9;
  double const rough = span_s / 10;
  double const power = std::pow(10.0, std::floor(std::log10(rough)));
  double step = power * 10;
  for (double const m : {1.0, 2.0, 5.0}) {
    if (power * m >= rough) {
      step = power * m;
      break;
    }
  }
  int const decimals = std::max(0, -int(std::floor(std::log10(step) + 1e-9)));
  double const y = lanes_bottom + 4;
  svg.line(plot_left, y, plot_right, y, R"(stroke="#333333" stroke-width="1")");
  for (int k = 0; double(k) * step <= span_s * (1 + 1e-9); ++k) {
    double const x = plot_left + double(k) * step / span_s * (plot_right - plot_left);
    svg.line(x, at.lanes_top, x, lanes_bottom, R"(stroke="#000000" stroke-opacity="0.12" stroke-width="1")");
    svg.line(x, y, x, y + 5, R"(stroke="#333333" stroke-width="1")");
    svg.text(x, y + 17, fmt::format("{:.{}f}", double(k) * step, decimals),
             R"(font-size="11" fill="#333333" text-anchor="middle")");
  }
  svg.text((plot_left + plot_right) / 2, y + 33, "time since the first event (s)",
           R"(font-size="12" fill="#333333" text-anchor="middle")");
}

void draw_events(svg_document& svg, timeline const& t, timeline_checks const& checks, layout const& at) {
  double const h = at.lane_height;
  for (auto const& w : t.waits) {
    svg.line(at.x(w.from_ns), at.lane_middle(w.lane), at.x(w.to_ns), at.lane_middle(w.lane),
             fmt::format(R"(stroke="#888888" stroke-width="{}")", svg_number(std::min(1.0, h / 4))));
  }
  for (std::size_t i = 0; i < t.holds.size(); ++i) {
    auto const& hold = t.holds[i];
    auto const end = hold.ended_ns.value_or(t.last_ns);
    auto const let_go = std::min(hold.releasing_ns.value_or(end), end);
    auto const tooltip = fmt::format(
        "{} hold{}, token {}: {:.6f} s to {:.6f} s, {}",
        hold.kind == hold_kind::read ? "read" : hold.kind == hold_kind::permit ? "permit" : "exclusive",
        hold.name.empty() ? "" : " of " + hold.name, hold.token, at.seconds(hold.acquired_ns), at.seconds(end),
        !hold.ended_ns ? "still open" : hold.lost ? "lost" : "released");
    // Solid while certainly held: up to the release sent, or the validity's end if that came first.
    auto const held_until = std::min(let_go, std::max(hold.window_end_ns, hold.acquired_ns));
    double const top = at.lane_top(hold.lane) + h * 0.15, x0 = at.x(hold.acquired_ns), x1 = at.x(held_until);
    auto attributes = std::string{fill_of(hold.kind)};
    if (checks.overlapping.contains(i)) {
      attributes += fmt::format(R"( stroke="#d62728" stroke-width="{}")", svg_number(std::min(2.0, h / 6)));
    }
    svg.rect(x0, top, std::max(0.6, x1 - x0), h * 0.7, attributes, tooltip);
    if (let_go > held_until) {
      svg.rect(x1, top, at.x(let_go) - x1, h * 0.7, fmt::format("{} {}", fill_of(hold.kind), past_validity), tooltip);
    }
    if (end > let_go) {
      auto const from = std::max(x1, at.x(let_go));
      svg.rect(from, top, at.x(end) - from, h * 0.7, fmt::format(R"({} fill-opacity="0.35")", fill_of(hold.kind)),
               tooltip);
    }
  }
  double const size = std::clamp(h * 0.45, 2.0, 6.0);
  for (auto const& m : t.marks) {
    draw_mark(svg, m.kind, at.x(m.at_ns), at.lane_middle(m.lane), size,
              fmt::format("{} at {:.6f} s", m.text, at.seconds(m.at_ns)));
  }
}

// Words onto lines of at most `columns` characters.
std::vector<std::string> wrapped(std::string const& text, std::size_t columns) {
  std::vector<std::string> lines{""};
  std::size_t from = 0;
  while (from < text.size()) {
    auto to = text.find(' ', from);
    if (to == std::string::npos) to = text.size();
    auto const word = text.substr(from, to - from);
    if (!lines.back().empty() && lines.back().size() + 1 + word.size() > columns) lines.emplace_back("    ");
    if (!lines.back().empty() && lines.back().back() != ' ') lines.back() += ' ';
    lines.back() += word;
    from = to + 1;
  }
  return lines;
}

}  // namespace

std::string draw_timeline(timeline const& t, timeline_checks const& checks, std::string const& title) {
  svg_document svg{width};
  svg.text(20, 26, title, R"(font-size="16" font-weight="bold" fill="#000000")");
  layout at{t.first_ns, std::max<std::int64_t>(1, t.last_ns - t.first_ns)};
  double const legend_bottom = draw_legend(svg, 46);
  auto const rows = fault_rows(t, at);
  auto const fault_band = rows.empty() ? 0.0 : double(*std::max_element(rows.begin(), rows.end()) + 1) * 14;
  at.lanes_top = legend_bottom + 10 + fault_band;
  at.lane_height = std::clamp(tallest_lanes / double(t.lanes.size()), 3.0, 20.0);
  double const lanes_bottom = at.lane_top(t.lanes.size());
  draw_lanes(svg, t, at);
  draw_axis(svg, at, lanes_bottom);
  draw_events(svg, t, checks, at);
  for (std::size_t i = 0; i < t.faults.size(); ++i) {
    auto const& f = t.faults[i];
    double const x = at.x(f.at_ns), y = legend_bottom + 10 + double(rows[i]) * 14 + 10;
    svg.line(x, y - 10, x, lanes_bottom, fault_stroke, fmt::format("{} at {:.6f} s", f.text, at.seconds(f.at_ns)));
    bool const leftwards = x + char_width * double(f.text.size()) + 8 > width;
    svg.text(leftwards ? x - 4 : x + 4, y, f.text,
             leftwards ? R"(font-size="11" fill="#d62728" text-anchor="end")" : R"(font-size="11" fill="#d62728")");
  }
  double y = lanes_bottom + 62;
  for (auto const& line : checks.caption) {
    for (auto const& part : wrapped(line, std::size_t((width - 40) / 6.8))) {
      svg.text(20, y, part, R"(font-size="12" fill="#000000" xml:space="preserve")");
      y += 16;
    }
  }
  return svg.finish(y + 8);
}

}  // namespace redisync::cli
