// Script calls: an item script's call is an ordinary EVALSHA that the multiplexer may merge with its
// neighbours through the script layer's hook.

#include "script/script.hpp"

#include <boost/test/unit_test.hpp>

#include <array>
#include <string>
#include <string_view>
#include <vector>

using redisync::detail::script;
using redisync::detail::script_call;
using redisync::resp::request;

namespace {

std::string const digest(40, 'a');
std::string const other_digest(40, 'b');
std::string const plain_digest(40, 'c');
script const items{"items", digest, "return 1", true};
script const other_items{"other", other_digest, "return 2", true};
script const plain{"plain", plain_digest, "return 3", false};

redisync::detail::io::outgoing call(script const& s, std::vector<std::string_view> keys,
                                    std::vector<std::string_view> args, bool by_digest = true,
                                    std::uint32_t slot = 0) {
  return script_call(s, slot, keys, args, by_digest);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(script_calls)

BOOST_AUTO_TEST_CASE(an_item_script_call_is_an_ordinary_evalsha) {
  auto const out = call(items, {"k1", "t1"}, {"acquire", "o1"});
  request expected;
  expected.push("EVALSHA", digest, 2, "k1", "t1", "acquire", "o1");
  BOOST_TEST(out.payload == expected.payload());
  BOOST_TEST(out.replies == 1u);
  BOOST_TEST(out.merge.hook != nullptr);
}

BOOST_AUTO_TEST_CASE(merged_calls_carry_all_keys_then_all_arguments_in_order) {
  // Items of different sizes, as the lock calls send them.
  auto const a = call(items, {"k1", "t1"}, {"acquire", "o1", ""});
  auto const b = call(items, {"k2"}, {"release", "o2", "30000", "c2"});
  auto const c = call(items, {"k3", "t3"}, {"acquire", "o3", "7"});
  std::array<redisync::detail::io::outgoing const*, 3> const calls{&a, &b, &c};
  std::string merged;
  a.merge.hook->write(merged, calls);
  request expected;
  expected.push("EVALSHA", digest, 5, "k1", "t1", "k2", "k3", "t3", "acquire", "o1", "", "release", "o2", "30000",
                "c2", "acquire", "o3", "7");
  BOOST_TEST(merged == expected.payload());
}

BOOST_AUTO_TEST_CASE(only_evalsha_calls_of_the_same_item_script_and_slot_merge) {
  auto const a = call(items, {"k1"}, {"x"});
  BOOST_TEST(a.merges_with(call(items, {"k2"}, {"y"})));
  BOOST_TEST(!a.merges_with(call(other_items, {"k2"}, {"y"})));
  BOOST_TEST(!a.merges_with(call(items, {"k2"}, {"y"}, true, 7)));  // another cluster slot
  // EVAL carries the body, which loads the script: such a call goes alone.
  BOOST_TEST(!a.merges_with(call(items, {"k2"}, {"y"}, false)));
  BOOST_TEST(!call(items, {"k2"}, {"y"}, false).merges_with(a));
  BOOST_TEST(!a.merges_with(call(plain, {"k2"}, {"y"})));
  BOOST_TEST(!call(plain, {"k1"}, {"x"}).merges_with(call(plain, {"k2"}, {"y"})));
}

BOOST_AUTO_TEST_SUITE_END()
