#pragma once

// Argument checks every primitive makes before any I/O.

#include <redisync/error.hpp>

#include <chrono>
#include <string_view>

namespace redisync::detail::sync {

inline boost::system::error_code validate_name(std::string_view name) {
  if (name.empty() || name.size() > 64 * 1024) return error::invalid_argument;
  return {};
}

inline boost::system::error_code validate_owner(std::string_view owner) {
  if (owner.empty() || owner.size() > 256) return error::invalid_argument;
  for (unsigned char c : owner) {
    if (c <= ' ' || c == 0x7f) return error::invalid_argument;
  }
  return {};
}

// Longer than a year is a mistake, and it keeps deadline arithmetic far from overflow.
inline boost::system::error_code validate_duration(std::chrono::milliseconds d, bool zero_allowed) {
  constexpr auto longest = std::chrono::hours{24 * 366};
  if (d.count() < 0 || (d.count() == 0 && !zero_allowed) || d > longest) return error::invalid_argument;
  return {};
}

}  // namespace redisync::detail::sync
