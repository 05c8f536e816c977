#pragma once

// RESP3 replies for tests without a server: written out on the wire and read back as values.

#include <redisync/resp/parser.hpp>

#include <boost/test/unit_test.hpp>

#include <initializer_list>
#include <string>
#include <utility>

namespace redisync::test {

// The one value `wire` holds (the test fails if it holds no whole value).
inline resp::value parsed(std::string const& wire) {
  resp::parser p;
  boost::system::error_code ec;
  p.feed(wire, ec);
  BOOST_TEST_REQUIRE(!ec);
  BOOST_TEST_REQUIRE(p.has_value());
  return p.take_value();
}

inline std::string bulk(std::string const& s) { return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n"; }
inline std::string integer(long long n) { return ":" + std::to_string(n) + "\r\n"; }
inline std::string array(std::initializer_list<std::string> items) {
  std::string out = "*" + std::to_string(items.size()) + "\r\n";
  for (auto const& i : items) out += i;
  return out;
}
inline std::string map(std::initializer_list<std::pair<std::string, std::string>> fields) {
  std::string out = "%" + std::to_string(fields.size()) + "\r\n";
  for (auto const& [k, v] : fields) out += bulk(k) + v;
  return out;
}

}  // namespace redisync::test
