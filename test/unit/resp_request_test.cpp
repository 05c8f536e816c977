#include <redisync/resp/parser.hpp>
#include <redisync/resp/request.hpp>

#include <boost/test/unit_test.hpp>

#include <array>
#include <string>
#include <string_view>
#include <vector>

using redisync::resp::request;

namespace {

request item_call(bool by_digest, std::string_view script, std::vector<std::string_view> keys,
                  std::vector<std::string_view> args) {
  request req;
  req.push_item_script_call(by_digest, script, keys, args);
  return req;
}

}  // namespace

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

BOOST_AUTO_TEST_CASE(an_item_script_call_is_an_ordinary_evalsha) {
  auto const req = item_call(true, "abc", {"k1", "t1"}, {"acquire", "o1"});
  request plain;
  plain.push("EVALSHA", "abc", 2, "k1", "t1", "acquire", "o1");
  BOOST_TEST(req.payload() == plain.payload());
  BOOST_TEST(req.expected_replies() == 1u);
  BOOST_TEST_REQUIRE(req.item_call().has_value());
  BOOST_TEST(req.item_call()->keys == 2u);
  BOOST_TEST(req.item_call()->args == 2u);
}

BOOST_AUTO_TEST_CASE(merged_calls_carry_all_keys_then_all_arguments_in_order) {
  // Items of different sizes, as the lock calls send them.
  auto const a = item_call(true, "abc", {"k1", "t1"}, {"acquire", "o1", ""});
  auto const b = item_call(true, "abc", {"k2"}, {"release", "o2", "30000", "c2"});
  auto const c = item_call(true, "abc", {"k3", "t3"}, {"acquire", "o3", "7"});
  std::array<request const*, 3> const calls{&a, &b, &c};
  std::string merged;
  request::append_merged(merged, calls);
  request expected;
  expected.push("EVALSHA", "abc", 5, "k1", "t1", "k2", "k3", "t3", "acquire", "o1", "", "release",
                "o2", "30000", "c2", "acquire", "o3", "7");
  BOOST_TEST(merged == expected.payload());
}

BOOST_AUTO_TEST_CASE(only_evalsha_calls_of_the_same_script_merge) {
  auto const a = item_call(true, "abc", {"k1"}, {"x"});
  BOOST_TEST(a.can_merge_with(item_call(true, "abc", {"k2"}, {"y"})));
  BOOST_TEST(!a.can_merge_with(item_call(true, "abd", {"k2"}, {"y"})));
  // EVAL carries the body, which loads the script: such a call goes alone.
  BOOST_TEST(!a.can_merge_with(item_call(false, "abc", {"k2"}, {"y"})));
  BOOST_TEST(!item_call(false, "abc", {"k2"}, {"y"}).can_merge_with(a));
  request ordinary;
  ordinary.push("EVALSHA", "abc", 1, "k2", "y");
  BOOST_TEST(!a.can_merge_with(ordinary));
  // A request with more than one command is never split up.
  auto two = item_call(true, "abc", {"k2"}, {"y"});
  two.push("PING");
  BOOST_TEST(!two.item_call().has_value());
  BOOST_TEST(!a.can_merge_with(two));
}

BOOST_AUTO_TEST_SUITE_END()
