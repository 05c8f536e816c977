#pragma once

// Reading a reply as a C++ type. A server error reply fails with its code (WRONGTYPE gives
// error::wrong_type, any other -ERR error::server_error: the same mapping as everywhere), a reply
// of another shape, or a number that does not fit the type, with error::unexpected_reply. Nothing
// is read silently as zero or empty.

#include <redisync/error.hpp>
#include <redisync/resp/value.hpp>

#include <boost/system/result.hpp>

#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace redisync {

namespace detail {
template <class T>
inline constexpr bool is_character = std::same_as<T, char> || std::same_as<T, wchar_t> || std::same_as<T, char8_t> ||
                                     std::same_as<T, char16_t> || std::same_as<T, char32_t>;
template <class T>
inline constexpr bool is_optional = false;
template <class T>
inline constexpr bool is_optional<std::optional<T>> = true;
}  // namespace detail

// Any integer type but bool and the character types, or double.
template <class T>
concept reply_number = (std::integral<T> && !std::same_as<T, bool> && !detail::is_character<T>) ||
                       std::same_as<T, double>;

// The types a reply can be read as:
//   an integer type (int, std::uint64_t, ...)  an integer, or a string holding a decimal integer
//                                            (GET of a counter), within the type's range
//   double                                   a double, an integer, or a string holding a number
//   std::optional<N> of those                the same, or null (GET of a counter that may be absent)
//   bool                                     a boolean, or the integer 0 or 1 (EXISTS, SETNX, SISMEMBER)
//   std::string                              a simple, bulk or verbatim string
//   std::optional<std::string>               a string, or null (GET)
//   std::vector<std::string>                 an array or set of strings (LRANGE, SMEMBERS)
//   std::vector<std::optional<std::string>>  an array of strings and nulls (MGET)
//   resp::value                              any reply but an error
template <class T>
concept reply_type = reply_number<T> || (detail::is_optional<T> && reply_number<typename T::value_type>) ||
                     std::same_as<T, bool> || std::same_as<T, std::string> ||
                     std::same_as<T, std::optional<std::string>> || std::same_as<T, std::vector<std::string>> ||
                     std::same_as<T, std::vector<std::optional<std::string>>> || std::same_as<T, resp::value>;

namespace detail {
// The number a reply holds, as the widest type of its kind.
boost::system::result<std::int64_t> read_signed(resp::value const& reply);
boost::system::result<std::uint64_t> read_unsigned(resp::value const& reply);
boost::system::result<double> read_double(resp::value const& reply);
template <class T, class Wide>
boost::system::result<T> narrow(boost::system::result<Wide> const& r) {
  if (!r) return r.error();
  if (!std::in_range<T>(*r)) return make_error_code(error::unexpected_reply);
  return static_cast<T>(*r);
}
// The types that are not numbers (reply.cpp).
template <class T>
boost::system::result<T> read_other(resp::value const& reply);
}  // namespace detail

template <reply_type T>
boost::system::result<T> read_reply(resp::value const& reply) {
  if constexpr (std::same_as<T, double>) {
    return detail::read_double(reply);
  } else if constexpr (reply_number<T>) {
    if constexpr (std::is_signed_v<T>) {
      return detail::narrow<T>(detail::read_signed(reply));
    } else {
      return detail::narrow<T>(detail::read_unsigned(reply));
    }
  } else if constexpr (detail::is_optional<T>) {
    if (reply.is_null()) return T{};
    auto r = read_reply<typename T::value_type>(reply);
    if (!r) return r.error();
    return T{*r};
  } else {
    return detail::read_other<T>(reply);
  }
}

}  // namespace redisync
