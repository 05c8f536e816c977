#pragma once

// The tool's JSON lines: Boost.JSON's text, except that a double is written the shortest way that
// reads back exactly, in plain decimals where that is shorter (0.57, not 5.7E-1).

#include <boost/json/value.hpp>

#include <string>

namespace redisync::cli {

std::string json_text(boost::json::value const& v);

}  // namespace redisync::cli
