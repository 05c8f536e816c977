#pragma once

// A key's Redis Cluster hash slot: CRC16-XMODEM of the key, or of its hash tag (the bytes between
// the first '{' and the next '}', if there is at least one), modulo 16384.

#include <cstdint>
#include <string>
#include <string_view>

namespace redisync::detail::routing {

inline constexpr std::uint32_t cluster_slots = 16384;

std::uint32_t hash_slot(std::string_view key) noexcept;

// A short hash tag whose keys (`...{tag}...`) land in `slot`: a key of one's own beside a named
// key, in its slot whatever that key is called.
std::string_view slot_tag(std::uint32_t slot);

// `prefix` then `name` as one key in `name`'s slot: the name wrapped in {} unless it has a brace
// already (Redisson's rule for the keys and channels beside a lock, a semaphore or a latch).
std::string key_beside(std::string_view prefix, std::string_view name);

}  // namespace redisync::detail::routing
