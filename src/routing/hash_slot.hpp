#pragma once

// A key's Redis Cluster hash slot: CRC16-XMODEM of the key, or of its hash tag (the bytes between
// the first '{' and the next '}', if there is at least one), modulo 16384.

#include <cstdint>
#include <string_view>

namespace redisync::detail::routing {

inline constexpr std::uint32_t cluster_slots = 16384;

std::uint32_t hash_slot(std::string_view key) noexcept;

}  // namespace redisync::detail::routing
