// The lock scripts' replies, read the way the client reads them: every shape a script returns,
// and the shapes no script returns, which must come out as unexpected rather than as a hold.

#include "primitives/lock_protocol/protocol.hpp"
#include "support/resp_wire.hpp"

#include <redisync/resp/parser.hpp>

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <optional>
#include <ostream>
#include <string>
#include <vector>

using redisync::detail::lock_protocol::acquire_reply;
using redisync::detail::lock_protocol::parse_release_reply;
using redisync::detail::lock_protocol::read_acquire_reply;
namespace data = boost::unit_test::data;
namespace resp = redisync::resp;
using redisync::test::parsed;

namespace {

using outcome = acquire_reply::outcome;

struct acquire_case {
  std::string name;
  std::string wire;
  outcome what;
  std::uint64_t token = 0;
  std::int64_t count = 0;
  std::int64_t pttl = 0;
};

std::ostream& operator<<(std::ostream& os, acquire_case const& c) { return os << c.name; }

std::vector<acquire_case> const acquire_cases{
    {"fresh_hold_is_a_token_string", "$16\r\n1763798400000001\r\n", outcome::held, 1763798400000001, 1},
    {"reentry_has_token_string_and_count", "*2\r\n$2\r\n17\r\n:3\r\n", outcome::held, 17, 3},
    {"reentry_after_the_counter_was_lost", "*2\r\n$1\r\n0\r\n:2\r\n", outcome::held, 0, 2},
    {"other_owner_gives_pttl", "*1\r\n:2500\r\n", outcome::busy, 0, 0, 2500},
    {"lock_without_expiry_gives_pttl_minus_one", "*1\r\n:-1\r\n", outcome::busy, 0, 0, -1},
    {"integer_is_not_a_token", ":1763798400000001\r\n", outcome::unexpected},
    {"zero_is_no_fresh_token", "$1\r\n0\r\n", outcome::unexpected},
    {"negative_is_no_token", "$2\r\n-5\r\n", outcome::unexpected},
    {"digits_and_more_is_no_token", "$3\r\n12x\r\n", outcome::unexpected},
    {"empty_string_is_no_token", "$0\r\n\r\n", outcome::unexpected},
    {"nil", "_\r\n", outcome::unexpected},
    {"empty_array", "*0\r\n", outcome::unexpected},
    {"three_elements", "*3\r\n$1\r\n1\r\n:2\r\n:3\r\n", outcome::unexpected},
    {"integer_token_in_pair", "*2\r\n:17\r\n:3\r\n", outcome::unexpected},
    {"string_count", "*2\r\n$1\r\n1\r\n$1\r\n1\r\n", outcome::unexpected},
    {"string_pttl", "*1\r\n$4\r\n2500\r\n", outcome::unexpected},
    {"server_error", "-ERR boom\r\n", outcome::unexpected},
};

}  // namespace

BOOST_AUTO_TEST_SUITE(script_replies)

BOOST_DATA_TEST_CASE(acquire_reply_is_read_as_its_shape_says, data::make(acquire_cases), c) {
  auto const r = read_acquire_reply(parsed(c.wire));
  BOOST_TEST((r.what == c.what));
  if (c.what == outcome::held) {
    BOOST_TEST(r.token == c.token);
    BOOST_TEST(r.count == c.count);
  }
  if (c.what == outcome::busy) BOOST_TEST(r.pttl == c.pttl);
}

BOOST_AUTO_TEST_CASE(release_reply_counts_levels_left_and_hand_offs) {
  BOOST_TEST(parse_release_reply(parsed(":2\r\n"), std::nullopt).remaining == 2);
  BOOST_TEST(parse_release_reply(parsed(":-1\r\n"), std::nullopt).remaining == -1);
  auto const handed = parse_release_reply(parsed("*2\r\n:0\r\n$2\r\n99\r\n"), std::nullopt);
  BOOST_TEST(handed.remaining == 0);
  BOOST_TEST((handed.handoff_token == std::optional<std::uint64_t>{99}));
  // -2: the attempt lost with a connection went through, so the count is one below the old one.
  BOOST_TEST(parse_release_reply(parsed(":-2\r\n"), std::int64_t{3}).remaining == 2);
  BOOST_TEST(parse_release_reply(parsed("+OK\r\n"), std::nullopt).remaining == -3);
  BOOST_TEST(parse_release_reply(parsed("*2\r\n:0\r\n:99\r\n"), std::nullopt).remaining == -3);
  BOOST_TEST(parse_release_reply(parsed("*2\r\n:0\r\n$1\r\nx\r\n"), std::nullopt).remaining == -3);
}

BOOST_AUTO_TEST_SUITE_END()
