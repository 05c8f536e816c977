#pragma once

// The acquire loop that every primitive shares, as one state machine for the fast path and the
// slow path: an attempt (granted | busy with a server-derived bound | unknown | failed); while busy,
// wait in the client's queue for the channel's message or the bound, then try again; undo a grant
// that arrives after the caller gave up; try again idempotently when an outcome is unknown. The
// common case is one attempt completed from its reply handler. A primitive supplies the attempt,
// the reading of its reply and the undo (the virtual functions below); the host (the client, or a
// fake in unit tests) supplies sending, subscriptions, queues, alarms and the clock.

#include <redisync/event.hpp>
#include <redisync/metrics.hpp>

#include "metrics/metrics_registry.hpp"

#include "routing/router.hpp"
#include "sync/hold.hpp"
#include "sync/spin_backoff.hpp"
#include "script/script.hpp"
#include "sync/unsettled.hpp"
#include "sync/waiter_queue.hpp"

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/cancellation_type.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace redisync::detail::sync {

using clock_type = std::chrono::steady_clock;

// A wake-up at a time, for one operation. The pending wake-up owns the operation (`owner`), so a
// waiting operation lives exactly as long as something is pending for it.
class alarm {
 public:
  virtual ~alarm() = default;
  virtual void at(clock_type::time_point t, std::shared_ptr<void> owner) = 0;  // replaces an earlier time
  virtual void cancel() = 0;
};

// What an acquire needs from its client. Everything runs on the client's strand.
class wait_host {
 public:
  virtual ~wait_host() = default;
  virtual clock_type::time_point now() const = 0;
  // Why the client takes no acquires any more: error::not_connected once stopped,
  // error::shutting_down during a shutdown; success while it runs.
  virtual io::error_code closed() const = 0;
  virtual std::chrono::milliseconds wait_poll_cap() const = 0;
  // How long an acquire without a deadline goes on trying after the server refused its attempt
  // with `ec` for a reason that passes (a slot moving, a failover, loading); 0: it fails at once.
  virtual std::chrono::milliseconds refusal_budget(io::error_code const& ec) const = 0;
  virtual unsettled_keys& unsettled() = 0;
  // The queue of a channel (made on first use) and whether it has waiters.
  virtual waiter_queue& queue(std::string const& channel) = 0;
  virtual bool has_waiters(std::string const& channel) const = 0;
  virtual void drop_queue_if_empty(std::string const& channel) = 0;
  virtual void count_waiter(int delta) = 0;
  virtual void send(script const& s, routing::slot_type slot, io::outgoing out, io::late_reply_handler late,
                    boost::asio::any_completion_handler<void(io::error_code, io::response)> done) = 0;
  virtual void when_loaded(script const& s, routing::slot_type slot, std::function<void(io::error_code)> then) = 0;
  virtual void subscribe(std::string const& channel, routing::slot_type slot,
                         std::function<void(io::error_code)> confirmed) = 0;
  virtual void unsubscribe(std::string const& channel) = 0;
  // `ring` runs when a wake-up is due; it may refer to the operation, which the wake-up owns.
  virtual std::unique_ptr<alarm> make_alarm(std::function<void()> ring) = 0;
  // Runs `f` after the work already queued on the client's strand.
  virtual void defer(std::function<void()> f) = 0;
  virtual void emit(event_kind kind, event_level level, std::string_view lock, std::string_view owner,
                    io::error_code ec, std::string_view detail) const = 0;
  virtual metrics::metrics_registry& metrics() = 0;
};

// The outcome of an abandoned attempt (its caller gave up while it was in flight), shared by the op
// and the attempt's late reply handler: the key stays unsettled until it is resolved.
struct late_attempt {
  bool resolved = false;  // the late outcome has been dealt with
  bool counted = false;   // the op marked the key unsettled and waits for this
};

class acquire_op : public waiter, public std::enable_shared_from_this<acquire_op> {
 public:
  struct params {
    std::string name;
    std::string owner;
    std::string channel;  // where releases are announced
    routing::slot_type slot = 0;
    std::optional<clock_type::time_point> deadline;  // nothing: wait until held
    bool once = false;                               // a wait of zero: one attempt, never queued
    // The longest sleep of this client's first waiter without a message: a lost message, or a
    // lock gone without one (expired, evicted, deleted during a fault), costs no more than this.
    std::chrono::milliseconds recheck{1000};
    // Waits by polling (spin_backoff) instead of listening on the channel, which it never joins:
    // for ACLs that deny channels. This client's own wake-ups and hand-offs still reach it.
    bool spin = false;
    // Its outcome and wait go in the metrics; not a multi-lock's member's: the multi-lock counts
    // its own call.
    bool counted = true;
  };

  acquire_op(std::shared_ptr<wait_host> host, params p);
  ~acquire_op() override;

  void start();
  // The caller's cancellation, on the strand. `in_flight`: whether an attempt may be cancelled
  // (only when the caller's handler has a cancellation slot is one bound to each attempt).
  void cancel(boost::asio::cancellation_type type);
  void enable_attempt_cancellation() { attempts_cancellable_ = true; }

  // A release handed the lock to this waiter (see can_take_handoff); the primitive has the grant.
  void handed_over();
  // A release handed the lock to this waiter too late to count (its lease ran out before this
  // client heard of it: the server stalled): the attempt's idempotent form confirms the grant and
  // renews its lease, or finds it gone and tries again.
  void confirm_grant();
  // Waiting, and no attempt in flight that could re-enter the lock after the hand-off.
  bool can_take_handoff() const noexcept {
    return (state_ == state::sleeping || state_ == state::subscribing) && !handoff_pending;
  }
  bool done() const noexcept { return state_ == state::done; }

  std::string_view owner() const noexcept override { return p_.owner; }
  bool trying() const noexcept override { return state_ == state::trying; }
  void on_wake(bool woken) override;

 protected:
  // unknown: the attempt may have gone through, or it did too late to count (see confirm_grant).
  enum class outcome_kind : std::uint8_t { granted, busy, unknown, unreadable, failed };
  struct outcome {
    outcome_kind what;
    io::error_code ec{};                 // failed
    std::chrono::milliseconds bound{};   // busy: when to look again at the latest (< 0: no bound)
  };

  // ---- the primitive's part
  virtual io::error_code check_arguments() const = 0;
  // Called once the key is settled, before the first attempt; true for a reentrant acquire, which
  // never waits behind others.
  virtual bool prepare() = 0;
  virtual script const& attempt_script() const = 0;
  // What a message on the channel means for the waiters (wake one, all, ...).
  virtual message_policy policy() const = 0;
  // Whether the server keeps the order of the waiters (a fair lock's queue): every waiter then
  // sends its first attempt at once to take its place, and sleeps until it is called by name or
  // its own bound, not behind this client's other waiters.
  virtual bool queues_on_server() const { return false; }
  // With a queue on the server: how soon this client's first waiter looks again after a message
  // called a waiter of another client, who may be dead and then takes nothing (see
  // waiter_queue::passed_over).
  virtual std::chrono::milliseconds look_after_passed_over() const { return std::chrono::milliseconds::max(); }
  // Whether this client's later arrivals queue behind this waiter from its first attempt on, not
  // only once it is refused (a read-write lock's writer: readers of this client that come while
  // its attempt is on its way must not get in first).
  virtual bool queues_before_trying() const { return false; }
  // Whether it starts only after the acquires that came with it (a read-write lock's reader,
  // with writer preference: the tasks that a burst of replies resumes ask together, and a writer
  // among them goes before the readers instead of waiting for reads that started with it).
  virtual bool yields_to_arrivals() const { return false; }
  // One attempt; `retry`: an earlier one's outcome was lost, so this one must not count twice.
  virtual io::outgoing attempt(bool retry, bool by_digest) = 0;
  // The reply of an attempt that came after the caller gave up (or error::ambiguous, or
  // operation_aborted if it never ran): undoes what it may have granted, then calls `then`.
  virtual void undo_late_grant(io::error_code ec, io::response const& replies, std::function<void()> then) = 0;
  // Reads an attempt's reply and, when granted, applies the grant.
  virtual outcome read(io::error_code ec, io::response& replies) = 0;
  // Undoes what the last attempt may have added, then calls `then`.
  virtual void undo(std::function<void()> then) = 0;
  // The caller's result: held (a grant read or handed over), or not (`ec`, or no error when a
  // bounded wait ran out).
  virtual void complete(io::error_code ec, bool held) = 0;
  // What the metrics count this acquire as; nothing for a wait that takes nothing (a latch's).
  virtual std::optional<primitive> counted_as() const { return std::nullopt; }
  // The reading of an attempt that answers a flag, 0 or 1: the outcome of a failure, a server error
  // or anything else than one such reply; nothing when `flag` holds it.
  static std::optional<outcome> read_flag(io::error_code ec, io::response const& replies, std::int64_t& flag);

  std::shared_ptr<wait_host> const& host() const noexcept { return host_; }
  params const& args() const noexcept { return p_; }
  // The owner's hold of this name: attempts for it wait while it is unsettled. Made when needed,
  // not kept: a waiter is small.
  std::string key() const;
  clock_type::time_point sent() const noexcept { return sent_; }

 private:
  enum class state : std::uint8_t { idle, settling, loading, trying, subscribing, sleeping, done };

  void begin();
  void send_attempt();
  void on_reply(io::error_code ec, io::response replies);
  void on_late_reply(std::shared_ptr<late_attempt> const& late, io::error_code ec, io::response const& replies);
  // The reply of an attempt whose outcome the op no longer takes: what it granted is undone.
  void abandon(io::error_code ec, io::response const& replies);
  void load_then_try_again();
  void on_busy(std::chrono::milliseconds bound);
  void retry_later(clock_type::time_point until);
  void join();
  void enqueue();
  void on_subscribed(io::error_code ec);
  void sleep();
  void wait_for(clock_type::time_point t);  // arms the alarm, which owns this op meanwhile
  void on_alarm();
  void leave();
  void undo_unknown();
  void finish(io::error_code ec);
  // Counts the outcome, then completes the caller's result.
  void report(io::error_code ec, bool held);
  bool expired() const { return p_.deadline && host_->now() >= *p_.deadline; }
  clock_type::time_point next_look() const;  // the deadline, or the poll cap from now
  bool cancelled() const noexcept { return cancelled_ != boost::asio::cancellation_type::none; }
  sync::alarm& wake_alarm();

  std::shared_ptr<wait_host> host_;
  params p_;
  state state_ = state::idle;
  bool retry_ = false;
  unsigned refusals_ = 0;  // attempts refused for now in a row (retry_later)
  clock_type::time_point refused_since_{};  // the first of them
  bool subscribed_ = false;
  bool attempts_cancellable_ = false;
  bool joining_ = false;  // inside join(): a subscription confirmed at once was there before the reply
  bool yielded_ = false;  // started after the acquires that came with it
  script_reloads reloads_;
  spin_backoff spin_;  // with params::spin
  boost::asio::cancellation_type cancelled_ = boost::asio::cancellation_type::none;
  clock_type::time_point const started_;
  clock_type::time_point sent_{};
  clock_type::time_point bound_at_{};  // the last busy reply's bound, from when it came
  std::shared_ptr<late_attempt> late_;
  boost::asio::cancellation_signal attempt_cancel_;
  std::unique_ptr<sync::alarm> alarm_;
};

}  // namespace redisync::detail::sync
