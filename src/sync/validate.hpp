#pragma once

// Argument checks every primitive makes before any I/O.

#include <redisync/error.hpp>
#include <redisync/lock.hpp>

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

// A lease or wait longer than a year (365 days) is a mistake, and the bound keeps deadline
// arithmetic far from overflow.
inline constexpr std::chrono::milliseconds longest_duration = std::chrono::hours{24 * 365};

inline boost::system::error_code validate_wait(std::chrono::milliseconds wait) {
  if (wait.count() < 0 || wait > longest_duration) return error::invalid_argument;
  return {};
}

inline boost::system::error_code validate_lease(std::chrono::milliseconds lease) {
  if (lease < shortest_lease || lease > longest_duration) return error::invalid_argument;
  return {};
}

}  // namespace redisync::detail::sync
