#pragma once

// Exponential reconnect delay with jitter: each step doubles the ceiling up to the maximum and
// picks a delay between half the ceiling and the ceiling, so clients that lost the same server do
// not come back in lock step.

#include <algorithm>
#include <chrono>
#include <random>

namespace redisync::detail::io {

class backoff {
 public:
  backoff(std::chrono::milliseconds min, std::chrono::milliseconds max)
      : min_{std::max(min, std::chrono::milliseconds{1})}, max_{std::max(max, min_)},
        ceiling_{min_}, rng_{std::random_device{}()} {}

  std::chrono::milliseconds next() {
    auto const ceiling = ceiling_;
    ceiling_ = std::min(ceiling_ * 2, max_);
    std::uniform_int_distribution<std::int64_t> pick{ceiling.count() / 2, ceiling.count()};
    return std::chrono::milliseconds{pick(rng_)};
  }

  void reset() noexcept { ceiling_ = min_; }

 private:
  std::chrono::milliseconds min_;
  std::chrono::milliseconds max_;
  std::chrono::milliseconds ceiling_;
  std::minstd_rand rng_;
};

}  // namespace redisync::detail::io
