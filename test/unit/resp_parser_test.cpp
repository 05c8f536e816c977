#include <redisync/resp/parser.hpp>

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <ostream>
#include <string>
#include <vector>

using redisync::resp::parse_error;
using redisync::resp::parser;
using redisync::resp::type;
using redisync::resp::value;
namespace data = boost::unit_test::data;

namespace {

struct sample {
  std::string name;
  std::string wire;
  type kind;
};

std::ostream& operator<<(std::ostream& os, sample const& s) { return os << s.name; }

// One message of every RESP3 type (and the RESP2 nulls), some nested.
std::vector<sample> const samples{
    {"simple_string", "+OK\r\n", type::simple_string},
    {"simple_error", "-ERR unknown command\r\n", type::simple_error},
    {"integer", ":-9223372036854775808\r\n", type::integer},
    {"bulk_string", "$12\r\nhello\r\nworld\r\n", type::bulk_string},
    {"empty_bulk", "$0\r\n\r\n", type::bulk_string},
    {"null", "_\r\n", type::null},
    {"resp2_null_bulk", "$-1\r\n", type::null},
    {"resp2_null_array", "*-1\r\n", type::null},
    {"double", ",3.14e-2\r\n", type::double_number},
    {"double_inf", ",-inf\r\n", type::double_number},
    {"boolean", "#t\r\n", type::boolean},
    {"big_number", "(3492890328409238509324850943850943825024385\r\n", type::big_number},
    {"bulk_error", "!21\r\nSYNTAX invalid syntax\r\n", type::bulk_error},
    {"verbatim", "=15\r\ntxt:Some string\r\n", type::verbatim_string},
    {"array", "*3\r\n:1\r\n$3\r\nfoo\r\n*2\r\n+a\r\n_\r\n", type::array},
    {"empty_array", "*0\r\n", type::array},
    {"map", "%2\r\n+first\r\n:1\r\n$6\r\nsecond\r\n#f\r\n", type::map},
    {"set", "~3\r\n+a\r\n+b\r\n:3\r\n", type::set},
    {"push", ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\n0\r\n", type::push},
    {"attribute", "|1\r\n+ttl\r\n:3600\r\n*2\r\n:1\r\n:2\r\n", type::array},
    {"nested_attribute", "*2\r\n|1\r\n+key\r\n+v\r\n:1\r\n:2\r\n", type::array},
};

value parse_whole(std::string const& wire) {
  parser p;
  boost::system::error_code ec;
  std::size_t const used = p.feed(wire, ec);
  BOOST_TEST_REQUIRE(!ec, ec.message());
  BOOST_TEST_REQUIRE(used == wire.size());
  BOOST_TEST_REQUIRE(p.has_value());
  return p.take_value();
}

// Feeds `chunks` the way a connection does: keep unconsumed bytes, append the next chunk.
value parse_chunks(std::vector<std::string> const& chunks) {
  parser p;
  std::string buffer;
  for (auto const& c : chunks) {
    buffer += c;
    boost::system::error_code ec;
    buffer.erase(0, p.feed(buffer, ec));
    BOOST_TEST_REQUIRE(!ec, ec.message());
  }
  BOOST_TEST_REQUIRE(buffer.empty());
  BOOST_TEST_REQUIRE(p.has_value());
  return p.take_value();
}

boost::system::error_code parse_error_of(std::string const& wire,
                                         redisync::resp::parser_limits limits = {}) {
  parser p{limits};
  boost::system::error_code ec;
  p.feed(wire, ec);
  return ec;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(resp_parser)

BOOST_DATA_TEST_CASE(parses_every_type, data::make(samples), s) {
  BOOST_TEST((parse_whole(s.wire).kind() == s.kind));
}

BOOST_DATA_TEST_CASE(reply_split_at_every_byte_boundary_parses_the_same, data::make(samples), s) {
  value const whole = parse_whole(s.wire);
  for (std::size_t i = 1; i < s.wire.size(); ++i) {
    BOOST_TEST_CONTEXT("split at " << i) {
      BOOST_TEST((parse_chunks({s.wire.substr(0, i), s.wire.substr(i)}) == whole));
    }
  }
  std::vector<std::string> bytes;
  for (char c : s.wire) bytes.emplace_back(1, c);
  BOOST_TEST((parse_chunks(bytes) == whole));
}

BOOST_AUTO_TEST_CASE(scalar_contents) {
  BOOST_TEST(parse_whole("+OK\r\n").text() == "OK");
  BOOST_TEST(parse_whole(":-9223372036854775808\r\n").integer() == INT64_MIN);
  BOOST_TEST(parse_whole("$12\r\nhello\r\nworld\r\n").text() == "hello\r\nworld");
  BOOST_TEST(parse_whole(",3.14e-2\r\n").number() == 0.0314);
  BOOST_TEST(std::isinf(parse_whole(",-inf\r\n").number()));
  BOOST_TEST(std::isnan(parse_whole(",nan\r\n").number()));
  BOOST_TEST(parse_whole("#f\r\n").boolean() == false);
  BOOST_TEST(parse_whole("(-12\r\n").text() == "-12");
  auto const verbatim = parse_whole("=15\r\ntxt:Some string\r\n");
  BOOST_TEST(verbatim.verbatim_format() == "txt");
  BOOST_TEST(verbatim.text() == "Some string");
  BOOST_TEST(parse_whole("!21\r\nSYNTAX invalid syntax\r\n").is_error());
}

BOOST_AUTO_TEST_CASE(aggregates_and_attributes) {
  auto const map = parse_whole("%2\r\n+first\r\n:1\r\n$6\r\nsecond\r\n#f\r\n");
  BOOST_TEST_REQUIRE(map.elements().size() == 4u);
  BOOST_TEST(map.elements()[2].text() == "second");

  auto const with_attribute = parse_whole("|1\r\n+ttl\r\n:3600\r\n*2\r\n:1\r\n:2\r\n");
  BOOST_TEST(with_attribute.elements().size() == 2u);
  BOOST_TEST_REQUIRE(with_attribute.attributes().size() == 2u);
  BOOST_TEST(with_attribute.attributes()[1].integer() == 3600);

  auto const nested = parse_whole("*2\r\n|1\r\n+key\r\n+v\r\n:1\r\n:2\r\n");
  BOOST_TEST_REQUIRE(nested.elements().size() == 2u);
  BOOST_TEST(nested.elements()[0].attributes().size() == 2u);
  BOOST_TEST(nested.elements()[1].attributes().empty());
}

BOOST_AUTO_TEST_CASE(fields_of_a_map_and_of_an_array_of_pairs_are_found_by_key) {
  auto const map = parse_whole("%2\r\n+role\r\n+master\r\n+port\r\n:7000\r\n");
  BOOST_TEST(map.field_text("role") == "master");
  BOOST_TEST_REQUIRE(map.field("port") != nullptr);
  BOOST_TEST(map.field("port")->integer() == 7000);
  BOOST_TEST(map.field_text("port") == "");  // not a string
  BOOST_TEST(map.field("ip") == nullptr);
  // SENTINEL SENTINELS answers in RESP2: an array of key, value pairs; an odd last key has no value.
  auto const pairs = parse_whole("*3\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$4\r\nport\r\n");
  BOOST_TEST(pairs.field_text("ip") == "127.0.0.1");
  BOOST_TEST(pairs.field("port") == nullptr);
}

BOOST_AUTO_TEST_CASE(binary_bulk_with_nul_and_crlf) {
  std::string const body{"a\0b\r\nc", 6};
  auto const v = parse_whole("$6\r\n" + body + "\r\n");
  BOOST_TEST(v.text() == body);
}

BOOST_AUTO_TEST_CASE(stops_after_each_top_level_message) {
  parser p;
  boost::system::error_code ec;
  std::string const wire = ":1\r\n:2\r\n";
  std::size_t const first = p.feed(wire, ec);
  BOOST_TEST(first == 4u);
  BOOST_TEST(p.take_value().integer() == 1);
  p.feed(std::string_view{wire}.substr(first), ec);
  BOOST_TEST(p.take_value().integer() == 2);
}

struct malformed {
  std::string name;
  std::string wire;
  parse_error expected;
};
std::ostream& operator<<(std::ostream& os, malformed const& m) { return os << m.name; }

std::vector<malformed> const malformed_inputs{
    {"unknown_type_byte", "@foo\r\n", parse_error::invalid_type_byte},
    {"empty_line", "\r\n", parse_error::invalid_type_byte},
    {"integer_letters", ":12a\r\n", parse_error::invalid_integer},
    {"integer_empty", ":\r\n", parse_error::invalid_integer},
    {"integer_overflow", ":9223372036854775808\r\n", parse_error::invalid_integer},
    {"negative_length", "$-2\r\n", parse_error::invalid_length},
    {"length_letters", "$abc\r\n", parse_error::invalid_length},
    {"bulk_missing_crlf", "$3\r\nfooXY", parse_error::missing_crlf},
    {"bare_cr_in_line", "+OK\rX\n", parse_error::missing_crlf},
    {"double_garbage", ",1.2.x\r\n", parse_error::invalid_double},
    {"double_hex", ",0x1p3\r\n", parse_error::invalid_double},
    {"boolean_garbage", "#x\r\n", parse_error::invalid_boolean},
    {"null_with_payload", "_x\r\n", parse_error::invalid_null},
    {"big_number_garbage", "(12x\r\n", parse_error::invalid_big_number},
    {"verbatim_without_format", "=3\r\nabc\r\n", parse_error::invalid_verbatim},
    {"null_map", "%-1\r\n", parse_error::invalid_length},
    {"streamed_string", "$?\r\n", parse_error::streaming_not_supported},
    {"huge_aggregate", "*99999999999\r\n", parse_error::aggregate_too_large},
};

BOOST_DATA_TEST_CASE(malformed_input_gives_a_typed_error, data::make(malformed_inputs), m) {
  auto const ec = parse_error_of(m.wire);
  BOOST_TEST((ec == m.expected), m.name << ": got " << ec.message());
}

BOOST_AUTO_TEST_CASE(limits_are_enforced) {
  redisync::resp::parser_limits limits;
  limits.max_depth = 3;
  limits.max_bulk = 8;
  limits.max_line = 16;
  BOOST_TEST((parse_error_of("*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", limits) ==
              parse_error::nesting_too_deep));
  BOOST_TEST((parse_error_of("$9\r\n", limits) == parse_error::bulk_too_large));
  BOOST_TEST((parse_error_of("+" + std::string(40, 'x'), limits) == parse_error::line_too_long));
  BOOST_TEST(!parse_error_of("*1\r\n*1\r\n:1\r\n", limits));
}

BOOST_AUTO_TEST_CASE(incomplete_input_consumes_nothing_partial) {
  parser p;
  boost::system::error_code ec;
  BOOST_TEST(p.feed("$5\r\nhel", ec) == 0u);
  BOOST_TEST(!ec);
  BOOST_TEST(!p.has_value());
  BOOST_TEST(p.feed(":12", ec) == 0u);
  BOOST_TEST(!ec);
}

BOOST_AUTO_TEST_SUITE_END()
