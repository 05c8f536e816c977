#pragma once

// The waits of a spinning acquire between two looks (Redisson's RSpinLock's): 1 ms, doubling to
// 128 ms, each cut by a random part of up to half, so that the spinners of many clients do not
// look in step.

#include <algorithm>
#include <chrono>
#include <random>

namespace redisync::detail::sync {

class spin_backoff {
 public:
  static constexpr std::chrono::microseconds first{1000};
  static constexpr std::chrono::microseconds longest{128'000};

  std::chrono::microseconds next() {
    auto const full = delay_;
    delay_ = std::min(delay_ * 2, longest);
    std::uniform_int_distribution<std::chrono::microseconds::rep> cut{0, full.count() / 2};
    return full - std::chrono::microseconds{cut(engine())};
  }

 private:
  static std::minstd_rand& engine() {
    thread_local std::minstd_rand e{std::random_device{}()};
    return e;
  }

  std::chrono::microseconds delay_ = first;
};

}  // namespace redisync::detail::sync
