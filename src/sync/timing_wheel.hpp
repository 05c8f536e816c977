#pragma once

// A hashed timing wheel without I/O or clocks of its own: the caller passes `now`. One wheel per
// client schedules every renewal and validity check, so a hundred thousand held locks cost list
// nodes, not timers. Entries due in the same tick fire together, which is what batches renewals.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <vector>

namespace redisync::detail::sync {

template <class Id>
class timing_wheel {
  struct entry;

 public:
  using clock = std::chrono::steady_clock;
  using time_point = clock::time_point;
  using duration = clock::duration;

  // Where an entry is. The wheel deactivates it when the entry fires, so cancelling an entry that
  // already fired (in the same tick, while the caller handles another one) does nothing. A handle
  // stays where it is while scheduled (neither copied nor moved); destroyed, it leaves the wheel.
  class handle {
   public:
    handle() = default;
    handle(handle const&) = delete;
    handle& operator=(handle const&) = delete;
    ~handle() {
      if (wheel_ != nullptr) wheel_->cancel(*this);
    }
    bool active() const noexcept { return wheel_ != nullptr; }

   private:
    friend class timing_wheel;
    timing_wheel* wheel_ = nullptr;
    std::size_t slot_ = 0;
    typename std::list<entry>::iterator it_{};
  };

  timing_wheel(duration tick, std::size_t slots, time_point start)
      : tick_{tick}, origin_{start}, slots_(slots) {}
  timing_wheel(timing_wheel const&) = delete;
  timing_wheel& operator=(timing_wheel const&) = delete;
  ~timing_wheel() {
    for (auto& slot : slots_) {
      for (auto& e : slot) e.owner->wheel_ = nullptr;
    }
  }

  // Schedules `id` at `due` (rounded up to the next tick; a time in the past fires on the next
  // advance). Replaces what `h` held before.
  void schedule(handle& h, time_point due, Id id) {
    cancel(h);
    std::uint64_t const t = std::max(tick_of(due), current_ + 1);
    std::size_t const s = static_cast<std::size_t>(t % slots_.size());
    slots_[s].push_back(entry{t, std::move(id), &h});
    h.wheel_ = this;
    h.slot_ = s;
    h.it_ = std::prev(slots_[s].end());
    ++size_;
  }

  void cancel(handle& h) noexcept {
    if (h.wheel_ != this) return;
    slots_[h.slot_].erase(h.it_);
    h.wheel_ = nullptr;
    --size_;
  }

  // Moves every entry due at or before `now` into `out` and deactivates its handle.
  void advance(time_point now, std::vector<Id>& out) {
    std::uint64_t const target = tick_of_floor(now);
    if (target <= current_) return;
    // After a long pause every slot is visited once: entries further out stay where they are.
    std::uint64_t const steps = std::min<std::uint64_t>(target - current_, slots_.size());
    for (std::uint64_t i = 1; i <= steps; ++i) {
      auto& slot = slots_[static_cast<std::size_t>((current_ + i) % slots_.size())];
      for (auto it = slot.begin(); it != slot.end();) {
        if (it->tick <= target) {
          it->owner->wheel_ = nullptr;
          out.push_back(std::move(it->id));
          it = slot.erase(it);
          --size_;
        } else {
          ++it;
        }
      }
    }
    current_ = target;
  }

  // The earliest tick with an entry, or nothing when the wheel is empty.
  std::optional<time_point> next_due() const {
    if (size_ == 0) return std::nullopt;
    std::uint64_t best = UINT64_MAX;
    for (std::size_t i = 1; i <= slots_.size(); ++i) {
      for (auto const& e : slots_[static_cast<std::size_t>((current_ + i) % slots_.size())]) {
        best = std::min(best, e.tick);
      }
      if (best <= current_ + i) break;  // nothing can come earlier than this slot's own tick
    }
    return origin_ + tick_ * static_cast<std::int64_t>(best);
  }

  // When an entry due at `t` fires: the start of the tick it is rounded up to.
  time_point firing_time(time_point t) const {
    return origin_ + tick_ * static_cast<std::int64_t>(std::max(tick_of(t), current_ + 1));
  }

  std::size_t size() const noexcept { return size_; }
  duration tick() const noexcept { return tick_; }

 private:
  std::uint64_t tick_of(time_point t) const {
    if (t <= origin_) return 0;
    return static_cast<std::uint64_t>((t - origin_ + tick_ - duration{1}) / tick_);
  }
  std::uint64_t tick_of_floor(time_point t) const {
    if (t <= origin_) return 0;
    return static_cast<std::uint64_t>((t - origin_) / tick_);
  }

  struct entry {
    std::uint64_t tick;
    Id id;
    handle* owner;
  };

  duration tick_;
  time_point origin_;
  std::uint64_t current_ = 0;
  std::vector<std::list<entry>> slots_;
  std::size_t size_ = 0;
};

}  // namespace redisync::detail::sync
