#include <redisync/resp/parser.hpp>
#include <redisync/resp/request.hpp>

#include <boost/test/unit_test.hpp>

#include <string>
#include <string_view>
#include <vector>

using redisync::resp::request;

BOOST_AUTO_TEST_SUITE(resp_request)

BOOST_AUTO_TEST_CASE(serializes_commands_as_arrays_of_bulk_strings) {
  request req;
  req.push("SET", "key", 42);
  BOOST_TEST(req.payload() == "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$2\r\n42\r\n");
  BOOST_TEST(req.commands() == 1u);
  BOOST_TEST(req.expected_replies() == 1u);
}

BOOST_AUTO_TEST_CASE(is_binary_safe) {
  std::string const value{"a\0\r\n$", 5};
  request req;
  req.push("SET", "k", value);
  // The parser reads a command back exactly (a request is a RESP array of bulk strings).
  redisync::resp::parser p;
  boost::system::error_code ec;
  p.feed(req.payload(), ec);
  BOOST_TEST_REQUIRE(p.has_value());
  BOOST_TEST(p.take_value().elements()[2].text() == value);
}

BOOST_AUTO_TEST_CASE(ranges_and_negative_integers) {
  request req;
  std::vector<std::string> keys{"a", "b"};
  req.push_range("DEL", keys);
  req.push("INCRBY", "n", -7);
  BOOST_TEST(req.payload() ==
             "*3\r\n$3\r\nDEL\r\n$1\r\na\r\n$1\r\nb\r\n*3\r\n$6\r\nINCRBY\r\n$1\r\nn\r\n$2\r\n-7\r\n");
  BOOST_TEST(req.expected_replies() == 2u);
}

BOOST_AUTO_TEST_CASE(subscribe_family_expects_one_push_per_channel) {
  request req;
  std::vector<std::string> channels{"a", "b", "c"};
  req.push_range("subscribe", channels);
  req.push("PING");
  BOOST_TEST(req.expected_pushes() == 3u);
  BOOST_TEST(req.expected_replies() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
