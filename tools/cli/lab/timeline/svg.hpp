#pragma once

// A standalone SVG 1.1 document written into a string: no scripts, no external fonts or files, so
// the picture opens anywhere (a browser, an image viewer, a docs page). Text and tooltips are
// escaped; coordinates are written with two decimals, so that the same calls give the same bytes.
// `attributes` are the caller's own constants (`fill="#3465a4"`), written as given.

#include <string>
#include <string_view>

namespace redisync::cli {

// `text` as XML character data or attribute value: markup escaped, and the control characters that
// XML 1.0 forbids (a history's `detail` may carry them) replaced by U+FFFD.
std::string xml_escape(std::string_view text);

class svg_document {
 public:
  explicit svg_document(double width) : width_{width} {}

  // Each shape may carry a tooltip (an SVG <title>): what a label too small to print would say.
  void rect(double x, double y, double w, double h, std::string_view attributes, std::string_view tooltip = {});
  void line(double x1, double y1, double x2, double y2, std::string_view attributes, std::string_view tooltip = {});
  void circle(double cx, double cy, double r, std::string_view attributes, std::string_view tooltip = {});
  void path(std::string_view d, std::string_view attributes, std::string_view tooltip = {});
  void text(double x, double y, std::string_view content, std::string_view attributes);

  // The whole file, `height` high: known only once everything is placed.
  std::string finish(double height) const;

 private:
  void shape(std::string_view element, std::string const& geometry, std::string_view attributes,
             std::string_view tooltip);

  double width_;
  std::string body_;
};

// A coordinate as the document writes it.
std::string svg_number(double v);

}  // namespace redisync::cli
