#include "cli/lab/timeline/svg.hpp"

#include <fmt/core.h>

namespace redisync::cli {

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char const c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') {
          out += "\xEF\xBF\xBD";
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string svg_number(double v) {
  auto out = fmt::format("{:.2f}", v);
  // Whole numbers without ".00": a picture of thousands of shapes is a third smaller.
  while (out.back() == '0') out.pop_back();
  if (out.back() == '.') out.pop_back();
  return out == "-0" ? "0" : out;
}

void svg_document::shape(std::string_view element, std::string const& geometry, std::string_view attributes,
                         std::string_view tooltip) {
  body_ += fmt::format("<{} {} {}", element, geometry, attributes);
  if (tooltip.empty()) {
    body_ += "/>\n";
  } else {
    body_ += fmt::format("><title>{}</title></{}>\n", xml_escape(tooltip), element);
  }
}

void svg_document::rect(double x, double y, double w, double h, std::string_view attributes,
                        std::string_view tooltip) {
  shape("rect",
        fmt::format(R"(x="{}" y="{}" width="{}" height="{}")", svg_number(x), svg_number(y), svg_number(w),
                    svg_number(h)),
        attributes, tooltip);
}

void svg_document::line(double x1, double y1, double x2, double y2, std::string_view attributes,
                        std::string_view tooltip) {
  shape("line",
        fmt::format(R"(x1="{}" y1="{}" x2="{}" y2="{}")", svg_number(x1), svg_number(y1), svg_number(x2),
                    svg_number(y2)),
        attributes, tooltip);
}

void svg_document::circle(double cx, double cy, double r, std::string_view attributes, std::string_view tooltip) {
  shape("circle", fmt::format(R"(cx="{}" cy="{}" r="{}")", svg_number(cx), svg_number(cy), svg_number(r)),
        attributes, tooltip);
}

void svg_document::path(std::string_view d, std::string_view attributes, std::string_view tooltip) {
  shape("path", fmt::format(R"(d="{}")", d), attributes, tooltip);
}

void svg_document::text(double x, double y, std::string_view content, std::string_view attributes) {
  body_ += fmt::format(R"(<text x="{}" y="{}" {}>{}</text>)", svg_number(x), svg_number(y), attributes,
                       xml_escape(content));
  body_ += '\n';
}

std::string svg_document::finish(double height) const {
  auto const w = svg_number(width_);
  auto const h = svg_number(height);
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
      "<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"#ffffff\"/>\n"
      "{2}</svg>\n",
      w, h, body_);
}

}  // namespace redisync::cli
