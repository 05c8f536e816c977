// Reading replies as numbers of any integer type and as double: in range or a typed error, never
// a value read silently as something else.

#include <redisync/reply.hpp>

#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <limits>
#include <optional>

using redisync::error;
using redisync::read_reply;
using redisync::resp::type;
using redisync::resp::value;

namespace {

value bulk(std::string text) { return value{type::bulk_string, std::move(text)}; }

template <class T>
bool fails_with(value const& v, error e) {
  auto const r = read_reply<T>(v);
  return !r && r.error() == e;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(reading_numbers)

BOOST_AUTO_TEST_CASE(an_integer_reply_is_read_as_any_integer_type_it_fits) {
  auto const v = value::make_integer(42);
  BOOST_TEST(*read_reply<int>(v) == 42);
  BOOST_TEST(*read_reply<long long>(v) == 42);
  BOOST_TEST(*read_reply<std::uint64_t>(v) == 42u);
  BOOST_TEST(*read_reply<std::int8_t>(v) == 42);
  BOOST_TEST(*read_reply<unsigned short>(v) == 42u);
  BOOST_TEST(*read_reply<double>(v) == 42.0);
}

BOOST_AUTO_TEST_CASE(a_decimal_string_is_read_as_a_number_across_the_whole_unsigned_range) {
  BOOST_TEST(*read_reply<std::uint64_t>(bulk("18446744073709551615")) == std::numeric_limits<std::uint64_t>::max());
  BOOST_TEST(*read_reply<std::int64_t>(bulk("-9223372036854775808")) == std::numeric_limits<std::int64_t>::min());
  BOOST_TEST(*read_reply<int>(bulk("-7")) == -7);
  BOOST_TEST(*read_reply<double>(bulk("2.5")) == 2.5);
  BOOST_TEST(*read_reply<double>(value::make_double(0.25, "0.25")) == 0.25);
}

BOOST_AUTO_TEST_CASE(a_number_that_does_not_fit_the_type_is_an_unexpected_reply) {
  BOOST_TEST(fails_with<std::int8_t>(value::make_integer(128), error::unexpected_reply));
  BOOST_TEST(fails_with<int>(value::make_integer(std::int64_t{1} << 40), error::unexpected_reply));
  BOOST_TEST(fails_with<unsigned>(value::make_integer(-1), error::unexpected_reply));
  BOOST_TEST(fails_with<std::uint64_t>(bulk("-1"), error::unexpected_reply));
  BOOST_TEST(fails_with<std::int64_t>(bulk("18446744073709551615"), error::unexpected_reply));
}

BOOST_AUTO_TEST_CASE(text_that_is_not_a_whole_number_is_an_unexpected_reply) {
  BOOST_TEST(fails_with<int>(bulk("12abc"), error::unexpected_reply));
  BOOST_TEST(fails_with<int>(bulk(" 12"), error::unexpected_reply));
  BOOST_TEST(fails_with<int>(bulk(""), error::unexpected_reply));
  BOOST_TEST(fails_with<int>(bulk("1.5"), error::unexpected_reply));
  BOOST_TEST(fails_with<double>(bulk("fast"), error::unexpected_reply));
  BOOST_TEST(fails_with<int>(value{}, error::unexpected_reply));  // a null where a number must be
}

BOOST_AUTO_TEST_CASE(a_server_error_keeps_its_code_and_an_optional_number_reads_null_as_empty) {
  BOOST_TEST(fails_with<int>(value{type::simple_error, "WRONGTYPE Operation against a key"}, error::wrong_type));
  BOOST_TEST(!read_reply<std::optional<unsigned>>(value{})->has_value());
  BOOST_TEST(**read_reply<std::optional<unsigned>>(bulk("7")) == 7u);
  BOOST_TEST(**read_reply<std::optional<double>>(bulk("0.5")) == 0.5);
  BOOST_TEST(fails_with<std::optional<std::int16_t>>(bulk("70000"), error::unexpected_reply));
}

BOOST_AUTO_TEST_SUITE_END()
