#pragma once

// When to ping an idle connection and when to give it up, without a clock of its own. A PING goes
// out whenever nothing was read for an interval; the connection is given up only when a PING is
// outstanding and nothing at all was read for a full interval since it was sent (or since the last
// read after it), so a healthy connection is never dropped, and a server that stopped answering is
// noticed within two intervals of silence.

#include <chrono>
#include <optional>

namespace redisync::detail::io {

class health_check {
 public:
  using clock = std::chrono::steady_clock;
  enum class action { none, ping, fail };

  // An interval of zero or less turns the check off.
  health_check(std::chrono::milliseconds interval, clock::time_point now)
      : interval_{interval}, last_read_{now} {}

  bool enabled() const noexcept { return interval_.count() > 0; }

  void on_read(clock::time_point now) noexcept { last_read_ = now; }
  void on_pong() noexcept { ping_sent_.reset(); }

  // What to do at `now`. After `ping` the caller sends a PING and reports its reply with on_pong.
  action on_timer(clock::time_point now) noexcept {
    if (!enabled()) return action::none;
    if (ping_sent_) {
      auto const since = std::max(*ping_sent_, last_read_);
      return now - since >= interval_ ? action::fail : action::none;
    }
    if (now - last_read_ < interval_) return action::none;
    ping_sent_ = now;
    return action::ping;
  }

  // When on_timer may next have something to do.
  clock::time_point next_check() const noexcept {
    if (ping_sent_) return std::max(*ping_sent_, last_read_) + interval_;
    return last_read_ + interval_;
  }

 private:
  std::chrono::milliseconds interval_;
  clock::time_point last_read_;
  std::optional<clock::time_point> ping_sent_;
};

}  // namespace redisync::detail::io
