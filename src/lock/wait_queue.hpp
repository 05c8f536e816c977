#pragma once

// The waiters of one lock inside one client, in arrival order. Only the head tries the lock when
// an unlock message arrives (one message wakes one waiter); the others wait for their turn, so a
// task that just released cannot jump ahead of tasks that have been waiting (no barging inside a
// process). A release can also hand the lock to the head directly (see release.lua).

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace redisync::detail {

struct handoff_grant {
  std::uint64_t token = 0;
  std::chrono::steady_clock::time_point sent{};  // when the release that handed it over was sent
};

struct waiter {
  waiter(boost::asio::any_io_executor ex, std::string owner_id, std::chrono::milliseconds lease_ms,
         bool renewed)
      : owner{std::move(owner_id)}, lease{lease_ms}, watchdog{renewed}, timer{std::move(ex)} {}

  std::string owner;
  std::chrono::milliseconds lease;
  bool watchdog;
  boost::asio::steady_timer timer;  // its sleep; cancelled to wake it
  // The sleeping acquire's handler. The timer's wait owns it, so that an io_context destroyed
  // with the wait pending destroys the acquire too; the waiter only looks it up.
  struct sleeper_slot {
    boost::asio::any_completion_handler<void()> handler;
  };
  std::weak_ptr<sleeper_slot> sleeper;
  bool woken = false;               // an unlock message or a reconnect asks it to try
  bool handoff_pending = false;     // a release is handing the lock to it right now
  bool done = false;                // the acquire returned (with or without the lock)
  std::optional<handoff_grant> granted;
  bool queued = false;
  std::list<std::shared_ptr<waiter>>::iterator position{};

  // Sleeps until `t`, a wake-up, or the cancellation of the sleeping operation.
  template <class Token>
  auto sleep_until(std::chrono::steady_clock::time_point t, Token&& token) {
    return boost::asio::async_initiate<Token, void()>(
        [this, t](auto handler) {
          auto const slot = boost::asio::get_associated_cancellation_slot(handler);
          auto const ex = boost::asio::get_associated_executor(handler);
          auto sleeping = std::make_shared<sleeper_slot>();
          boost::asio::any_completion_handler<void()>{std::move(handler)}.swap(sleeping->handler);
          sleeper = sleeping;
          auto on_timer = [sleeping](boost::system::error_code) { call(*sleeping); };
          timer.expires_at(t);
          timer.async_wait(boost::asio::bind_cancellation_slot(
              slot, boost::asio::bind_executor(ex, std::move(on_timer))));
        },
        token);
  }
  // Resumes the sleeping acquire now, inside the caller (which runs on the strand): a hand-over
  // wakes the new holder without a trip through the scheduler, since it is on the critical path.
  void resume_now() {
    timer.cancel();
    if (auto sleeping = sleeper.lock()) call(*sleeping);
  }
  // Calls the handler once. Swapped out, not moved: Asio 1.26's any_completion_handler move
  // assignment never returns.
  static void call(sleeper_slot& s) {
    boost::asio::any_completion_handler<void()> h;
    h.swap(s.handler);
    if (h) std::move(h)();
  }
  void wake() {
    woken = true;
    timer.cancel();
  }
  // Makes it look at its situation again (it became the head) without asking it to try.
  void nudge() { timer.cancel(); }
};

struct wait_queue {
  std::list<std::shared_ptr<waiter>> waiters;
  std::uint32_t consecutive_handoffs = 0;
  // When the lock is expected to be free at the latest, from the last PTTL seen: the head sleeps
  // no longer than this even if no message comes (messages are only a hint).
  std::chrono::steady_clock::time_point expected_free{};

  bool empty() const noexcept { return waiters.empty(); }
  std::shared_ptr<waiter> head() const { return waiters.empty() ? nullptr : waiters.front(); }
  bool is_head(waiter const& w) const { return !waiters.empty() && waiters.front().get() == &w; }

  void push_back(std::shared_ptr<waiter> const& w) {
    w->position = waiters.insert(waiters.end(), w);
    w->queued = true;
  }
  void push_front(std::shared_ptr<waiter> const& w) {
    bool const had_head = !waiters.empty();
    w->position = waiters.insert(waiters.begin(), w);
    w->queued = true;
    if (had_head) std::next(waiters.begin())->get()->nudge();
  }
  // Removes `w`; a wake-up it did not use passes to the new head, which is told it leads now.
  void remove(waiter& w) {
    if (!w.queued) return;
    bool const was_head = is_head(w);
    waiters.erase(w.position);
    w.queued = false;
    if (!was_head || waiters.empty()) return;
    if (w.woken) {
      waiters.front()->wake();
    } else {
      waiters.front()->nudge();
    }
  }
  void wake_head() {
    if (auto h = head()) h->wake();
  }
  void wake_all() {
    for (auto& w : waiters) w->wake();
  }
};

}  // namespace redisync::detail
