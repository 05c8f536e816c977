#pragma once

// Reading a reply as a C++ type. A server error reply fails with its code (WRONGTYPE gives
// error::wrong_type, any other -ERR error::server_error: the same mapping as everywhere), a reply
// of another shape with error::unexpected_reply. Nothing is read silently as zero or empty.

#include <redisync/error.hpp>
#include <redisync/resp/value.hpp>

#include <boost/system/result.hpp>

#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace redisync {

// The types a reply can be read as:
//   std::int64_t                             an integer, or a string holding a decimal integer
//                                            (GET of a counter)
//   std::optional<std::int64_t>              the same, or null (GET of a counter that may be absent)
//   bool                                     a boolean, or the integer 0 or 1 (EXISTS, SETNX, SISMEMBER)
//   std::string                              a simple, bulk or verbatim string
//   std::optional<std::string>               a string, or null (GET)
//   std::vector<std::string>                 an array or set of strings (LRANGE, SMEMBERS)
//   std::vector<std::optional<std::string>>  an array of strings and nulls (MGET)
//   resp::value                              any reply but an error
template <class T>
concept reply_type = std::same_as<T, std::int64_t> || std::same_as<T, std::optional<std::int64_t>> ||
                     std::same_as<T, bool> || std::same_as<T, std::string> ||
                     std::same_as<T, std::optional<std::string>> || std::same_as<T, std::vector<std::string>> ||
                     std::same_as<T, std::vector<std::optional<std::string>>> || std::same_as<T, resp::value>;

template <reply_type T>
boost::system::result<T> read_reply(resp::value const& reply);

}  // namespace redisync
