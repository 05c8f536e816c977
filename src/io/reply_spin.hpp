#pragma once

#include <algorithm>
#include <cstdint>

namespace redisync::detail::io {

// Decides whether the reader polls the socket for a reply that is due instead of sleeping in the
// reactor at once. Waking a thread that sleeps costs tens of µs on a virtual machine, as much as
// the rest of a loopback round trip, and polling saves it when the reply comes within the spin
// budget. A reply that did not come in time makes the next 1, 2, 4 … 1024 waits sleep at once, so
// against a server farther away than the budget the polling costs one budget per 1024 replies.
class reply_spin {
 public:
  bool should_spin() noexcept {
    if (skip_ == 0) return true;
    --skip_;
    return false;
  }

  // `after_empty_try`: the reply came while polling. Only that shows that polling spared a
  // sleep; a reply that was there at once (a far server's pipelined replies) leaves the back-off.
  void on_reply_in_time(bool after_empty_try) noexcept {
    if (after_empty_try) backoff_ = 0;
  }

  void on_reply_late() noexcept {
    backoff_ = std::min(backoff_ == 0 ? 1 : backoff_ * 2, max_backoff);
    skip_ = backoff_;
  }

 private:
  static constexpr std::uint32_t max_backoff = 1024;
  std::uint32_t backoff_ = 0;
  std::uint32_t skip_ = 0;
};

}  // namespace redisync::detail::io
