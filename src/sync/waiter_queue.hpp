#pragma once

// The waiters of one channel inside one client, in arrival order. A message wakes whom the
// primitive's policy says: the first (a lock's unlock), all (a latch at zero), the first n (n
// semaphore permits), one named waiter (the fair lock's next in line), or the first of a kind and
// else all (a read-write lock's first writer, else its readers). Only the head
// tries the lock on its own, so a task that just released cannot jump ahead of tasks that have
// been waiting. Sans-io: waking means calling the waiter's on_wake(). The queue does not own its
// waiters (their pending waits do), so an io_context destroyed with waits pending frees them.

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace redisync::detail::sync {

class waiter {
 public:
  virtual ~waiter() = default;
  // `woken`: asked to try (a message, a reconnect); otherwise only told that it may lead now.
  virtual void on_wake(bool woken) = 0;
  virtual std::string_view owner() const noexcept = 0;
  // Its own attempt is on the way.
  virtual bool trying() const noexcept { return false; }

  bool queued() const noexcept { return queued_; }
  bool woken = false;            // asked to try since its last attempt began
  bool handoff_pending = false;  // a release is handing it the lock right now
  // Of the kind that a policy wakes first (a read-write lock's writer); set before it queues.
  bool goes_first = false;

 private:
  friend class waiter_queue;
  struct node {
    waiter* raw;  // only compared: the waiter may be gone
    std::weak_ptr<waiter> weak;
  };
  bool queued_ = false;
  std::list<node>::iterator position_{};
  std::list<std::list<node>::iterator>::iterator first_kind_position_{};  // (goes_first)
};

class waiter_queue;

// What a message on a channel means for the waiters of this client (the primitive's policy).
using message_policy = void (*)(waiter_queue& queue, std::string_view message);

class waiter_queue {
 public:
  bool empty() const noexcept { return waiters_.empty(); }
  std::size_t size() const noexcept { return waiters_.size(); }
  std::shared_ptr<waiter> head() const { return waiters_.empty() ? nullptr : waiters_.front().weak.lock(); }
  bool is_head(waiter const& w) const { return !waiters_.empty() && waiters_.front().raw == &w; }
  // The first of the first `reach` waiters that `accepts`, or null.
  template <class Accepts>
  std::shared_ptr<waiter> first_within(std::size_t reach, Accepts accepts) const {
    for (auto it = waiters_.begin(); it != waiters_.end() && reach > 0; ++it, --reach) {
      auto w = it->weak.lock();
      if (w && accepts(*w)) return w;
    }
    return nullptr;
  }
  // The first waiter of `owner` (found by name: a crowd is not walked for it), or null.
  std::shared_ptr<waiter> find_named(std::string_view owner) const {
    auto const n = find_node(owner);
    return n ? n->weak.lock() : nullptr;
  }
  // Whether a waiter that goes first waits here.
  bool first_kind_waits() const noexcept { return !first_kind_.empty(); }

  void push_back(std::shared_ptr<waiter> const& w) { insert(waiters_.end(), w); }
  // In front (a waiter that a failed hand-off gives back): the old head is told it no longer leads.
  void push_front(std::shared_ptr<waiter> const& w) {
    bool const had_head = !waiters_.empty();
    insert(waiters_.begin(), w);
    if (had_head) wake(*std::next(waiters_.begin()), false);
  }
  // Removes `w`; a wake-up it did not use passes to the new head, which is told it leads now.
  void remove(waiter& w) {
    if (!w.queued_) return;
    if (!w.woken) ++changes;
    bool const was_head = is_head(w);
    auto const [first, last] = by_owner_.equal_range(std::string{w.owner()});
    for (auto it = first; it != last; ++it) {
      if (it->second == w.position_) {
        by_owner_.erase(it);
        break;
      }
    }
    if (w.goes_first) first_kind_.erase(w.first_kind_position_);
    waiters_.erase(w.position_);
    w.queued_ = false;
    if (was_head && !waiters_.empty()) wake(waiters_.front(), w.woken);
  }

  // The policies.
  void wake_one() {
    if (!waiters_.empty()) wake(waiters_.front(), true);
  }
  void wake_all() { wake_each(snapshot(waiters_.size())); }
  void wake_n(std::size_t n) { wake_each(snapshot(n)); }
  // `n` besides those whose attempt is out: each of those takes one permit at most, so asking
  // one again at every freeing would leave the rest free while others sleep. Too few sleep, and
  // those that try are asked to try again (their attempt may have run before the permits were
  // freed).
  void wake_n_more(std::size_t n) {
    std::vector<waiter::node> asked, trying;
    for (auto it = waiters_.begin(); it != waiters_.end() && asked.size() < n; ++it) {
      auto const w = it->weak.lock();
      if (!w) continue;
      if (!w->trying()) {
        asked.push_back(*it);
      } else if (trying.size() < n) {
        trying.push_back(*it);
      }
    }
    for (std::size_t i = 0; asked.size() < n && i < trying.size(); ++i) asked.push_back(trying[i]);
    wake_each(asked);
  }
  // The first waiter that goes first (a read-write lock's writer), or all if none waits.
  void wake_first_kind_or_all() {
    if (first_kind_.empty()) return wake_all();
    wake(*first_kind_.front(), true);
  }
  // The waiters in front of the first that goes first (a read-write lock's readers before its
  // first waiting writer, who may share a read just granted).
  void wake_until_first_kind() {
    auto const end = first_kind_.empty() ? waiters_.end() : first_kind_.front();
    std::vector<waiter::node> front{waiters_.begin(), end};
    wake_each(front);
  }
  // The named waiter; if none is here, the first waiter is told that the server's queue passed this
  // client over (it looks again soon, in case the one called is dead).
  void wake_named(std::string_view owner) {
    if (auto const n = find_node(owner)) return wake(*n, true);
    tell_passed_over();
  }
  void tell_passed_over() {
    if (waiters_.empty()) return;
    passed_over = true;
    wake(waiters_.front(), false);
  }

  // A message on the channel (or what counts as one): the policy says whom it wakes.
  void deliver(std::string_view message) {
    if (policy) policy(*this, message);
  }

  message_policy policy = nullptr;  // set by the waiters that join
  std::uint32_t consecutive_handoffs = 0;
  bool passed_over = false;  // see wake_named
  // Grows when a waiter arrives, or leaves without having been asked to try (a writer that gave
  // up): then the waiters before the first of a kind may include sleeping ones again.
  std::uint64_t changes = 0;
  // A word the queue's message policy keeps for itself (a read-write lock's: the `changes` at
  // which its readers were last let share).
  std::uint64_t policy_mark = ~std::uint64_t{0};
  // When the lock is expected to be free at the latest, from the last bound the server gave: the
  // head sleeps no longer than this even if no message comes (messages are only a hint).
  std::chrono::steady_clock::time_point expected_free{};

 private:
  void insert(std::list<waiter::node>::iterator before, std::shared_ptr<waiter> const& w) {
    w->position_ = waiters_.insert(before, {w.get(), w});
    by_owner_.emplace(std::string{w->owner()}, w->position_);
    // A waiter joins at either end of the queue, so of those that go first too.
    if (w->goes_first) {
      bool const at_back = before == waiters_.end();
      w->first_kind_position_ = first_kind_.insert(at_back ? first_kind_.end() : first_kind_.begin(), w->position_);
    }
    w->queued_ = true;
    ++changes;
  }

  // Of several waiters of one owner (rare: one owner's concurrent acquires), the first in line.
  waiter::node const* find_node(std::string_view owner) const {
    auto const [first, last] = by_owner_.equal_range(std::string{owner});
    if (first == last) return nullptr;
    if (std::next(first) == last) return &*first->second;
    for (auto const& n : waiters_) {
      auto const w = n.weak.lock();
      if (w && w->owner() == owner) return &n;
    }
    return nullptr;
  }

  // A waiter whose owner is gone (its io_context was destroyed) is not woken.
  static void wake(waiter::node const& n, bool woken) {
    auto const w = n.weak.lock();
    if (!w) return;
    if (woken) w->woken = true;
    w->on_wake(woken);
  }

  // The first `n` waiters, copied: a woken waiter may leave (and wake the next head), and the
  // last to leave may drop this queue, so a wake of several never walks the list it changes.
  std::vector<waiter::node> snapshot(std::size_t n) const {
    std::vector<waiter::node> out;
    out.reserve(std::min(n, waiters_.size()));
    for (auto it = waiters_.begin(); it != waiters_.end() && out.size() < n; ++it) out.push_back(*it);
    return out;
  }
  // Touches no member: the queue may be gone when it returns.
  static void wake_each(std::vector<waiter::node> const& nodes) {
    for (auto const& n : nodes) wake(n, true);
  }

  std::list<waiter::node> waiters_;
  // Keys are copies: a waiter may be freed while queued (see above), its name with it.
  std::unordered_multimap<std::string, std::list<waiter::node>::iterator> by_owner_;
  std::list<std::list<waiter::node>::iterator> first_kind_;  // the waiters that go first, in order
};

// The policies of a semaphore's channel, whose messages carry a number of permits: that many
// waiters try; a message that is no number wakes the first.
inline std::optional<std::size_t> permits_in(std::string_view message) {
  std::size_t permits = 0;
  auto const [end, ec] = std::from_chars(message.data(), message.data() + message.size(), permits);
  if (ec != std::errc{} || end != message.data() + message.size()) return std::nullopt;
  return permits;
}

// Redisson's semaphore says how many are free now: the first that many try, counting those that
// try already.
inline void wake_as_many_as_free(waiter_queue& queue, std::string_view message) {
  auto const permits = permits_in(message);
  if (!permits) return queue.wake_one();
  queue.wake_n(*permits);
}

// Leased permits say how many a call freed: that many more try (each of several releases in a row
// frees its own).
inline void wake_as_many_as_freed(waiter_queue& queue, std::string_view message) {
  auto const permits = permits_in(message);
  if (!permits) return queue.wake_one();
  queue.wake_n_more(*permits);
}

}  // namespace redisync::detail::sync
