#include "cli/common/json_text.hpp"

#include <boost/json/serialize.hpp>
#include <fmt/core.h>

#include <cmath>

namespace redisync::cli {

namespace json = boost::json;

namespace {

void append(std::string& out, json::value const& v) {
  switch (v.kind()) {
    case json::kind::object: {
      out += '{';
      bool first = true;
      for (auto const& [key, member] : v.get_object()) {
        if (!first) out += ',';
        first = false;
        out += json::serialize(json::string_view{key});
        out += ':';
        append(out, member);
      }
      out += '}';
      return;
    }
    case json::kind::array: {
      out += '[';
      bool first = true;
      for (auto const& element : v.get_array()) {
        if (!first) out += ',';
        first = false;
        append(out, element);
      }
      out += ']';
      return;
    }
    case json::kind::double_:
      // JSON has no NaN or infinity: those are left to Boost.JSON.
      if (std::isfinite(v.get_double())) {
        out += fmt::format("{}", v.get_double());
        return;
      }
      break;
    default: break;
  }
  out += json::serialize(v);
}

}  // namespace

std::string json_text(json::value const& v) {
  std::string out;
  append(out, v);
  return out;
}

}  // namespace redisync::cli
