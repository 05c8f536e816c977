#pragma once

#include <cstdint>

namespace redisync {

// What a lock handle locks: a reentrant lock, a fair lock, or one side of a read-write lock.
enum class lock_kind : std::uint8_t { reentrant, fair, read, write };

}  // namespace redisync
