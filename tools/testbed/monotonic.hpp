#pragma once

#include <chrono>
#include <cstdint>
#include <ctime>

namespace redisync::process {

// CLOCK_MONOTONIC in nanoseconds: comparable across the processes of one machine (event histories
// of `redisync stress`, the tests that read them).
inline std::int64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// A steady_clock time on the same scale: libstdc++'s steady_clock is CLOCK_MONOTONIC.
inline std::int64_t monotonic_ns(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace redisync::process
