#pragma once

// The state behind a client, all of it on the connection's strand: hold records, the watchdog's
// timing wheel, wait queues and shared subscriptions. Public operations start coroutines here.

#include <redisync/client.hpp>
#include <redisync/detail/pending_handler.hpp>
#include <redisync/held.hpp>

#include "lock/subscriptions.hpp"
#include "lock/wait_queue.hpp"
#include "script/script.hpp"
#include "watchdog/timing_wheel.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace redisync::detail {

using clock_type = std::chrono::steady_clock;
using error_code = boost::system::error_code;

struct loss_notifier {
  explicit loss_notifier(boost::asio::any_io_executor e) : ex{std::move(e)} {}
  boost::asio::cancellation_signal signal;
  boost::asio::any_io_executor ex;
};

struct hold_state;

// One guard's level of a hold. Its state moves held -> releasing -> released, each step once and
// by whoever wins the exchange (the guard on any thread, or a release through the lock handle on
// the strand), so that no level is released twice.
enum class level_state : std::uint8_t { held, releasing, released };
struct hold_level {
  std::atomic<level_state> state{level_state::held};
  bool let_go() {
    auto expected = level_state::held;
    return state.compare_exchange_strong(expected, level_state::releasing);
  }
};

struct wheel_item {
  std::weak_ptr<hold_state> hold;
  bool renewal;  // false: a validity check
};
using wheel_type = timing_wheel<wheel_item>;

// One owner's hold on one lock, shared by the guards of its nested levels.
struct hold_state {
  std::string name;
  std::string owner;
  std::string key;  // hold_key(owner, name)
  std::string channel;
  std::string token_key;
  std::uint64_t token = 0;
  std::int64_t count = 0;  // hold levels, as the server last reported them
  std::chrono::milliseconds lease{};
  bool watchdog = false;
  bool granted = false;  // false while the first acquire is in flight (watchdog already armed)
  std::atomic<std::int64_t> valid_until_ns{0};
  std::atomic<hold_status> status{hold_status::held};
  wheel_type::handle renewal_entry;
  wheel_type::handle validity_entry;
  std::vector<boost::asio::steady_timer*> loss_timers;  // wait_lost() calls, woken on any end
  std::vector<std::weak_ptr<loss_notifier>> notifiers;
  // The levels of this hold's guards, outermost first, until the server confirmed their release.
  std::vector<std::shared_ptr<hold_level>> levels;

  clock_type::time_point valid_until() const {
    return clock_type::time_point{clock_type::duration{valid_until_ns.load()}};
  }
  void set_valid_until(clock_type::time_point t) {
    valid_until_ns.store(t.time_since_epoch().count());
  }
  bool active() const {
    auto const s = status.load();
    return s == hold_status::held || s == hold_status::uncertain;
  }
  // Whether the application still holds a level: only then is the hold renewed.
  bool application_holds() const {
    return std::any_of(levels.begin(), levels.end(),
                       [](auto const& l) { return l->state == level_state::held; });
  }
  // Lets go of the innermost level the application holds (a release through the lock handle).
  std::shared_ptr<hold_level> let_go_innermost() {
    for (auto it = levels.rbegin(); it != levels.rend(); ++it) {
      if ((*it)->let_go()) return *it;
    }
    return nullptr;
  }
};

// A caller's cancellation, forwarded to the strand. `emitted` remembers it for an operation that
// passes from one step to the next (a new step's slot does not see earlier emissions).
struct forwarded_cancellation {
  boost::asio::cancellation_signal signal;
  boost::asio::cancellation_type emitted = boost::asio::cancellation_type::none;
};

struct acquire_args {
  std::string name;
  std::string owner;
  std::optional<std::chrono::milliseconds> lease;  // nothing: the watchdog lease, renewed
  std::optional<std::chrono::milliseconds> wait;   // nothing: wait until held
  clock_type::time_point started = clock_type::now();
  // Set when the fast path's attempt did not end the acquire: what that attempt learnt.
  std::optional<std::int64_t> first_pttl{};  // another owner holds the lock for this long
  bool first_ambiguous = false;            // the attempt may have gone through
};

// The two acquire signatures: acquire() holds or fails (error::timeout); try_acquire() may end
// without the lock.
using acquire_result = std::tuple<error_code, std::optional<held>>;
inline std::tuple<error_code, held> to_completion(acquire_result r, void (*)(error_code, held)) {
  auto& [ec, h] = r;
  if (!ec && !h) ec = error::timeout;
  return std::tuple{ec, h ? std::move(*h) : held{}};
}
inline acquire_result to_completion(acquire_result r, void (*)(error_code, std::optional<held>)) {
  return r;
}

// Key names (Redisson's): helper keys wrap the lock name in {} unless it has braces already, so
// that every key of a lock hashes to the same cluster slot.
std::string channel_of(std::string_view name);
std::string token_key_of(std::string_view name);
error_code validate_name(std::string_view name);
error_code validate_owner(std::string_view owner);
error_code validate_duration(std::chrono::milliseconds d, bool zero_allowed);

// No owner nests a lock deeper than this; a hold count beyond it in a reply is unreadable.
inline constexpr std::int64_t max_hold_count = 1'000'000'000;

// What an acquire script call answered (acquire.lua): a hold with its token and count, the
// PTTL of another owner's hold, or something no version of the script returns.
struct acquire_reply {
  enum class outcome { held, busy, unexpected };
  outcome what = outcome::unexpected;
  std::uint64_t token = 0;
  std::int64_t count = 0;
  std::int64_t pttl = 0;
};

acquire_reply read_acquire_reply(resp::value const& reply);

// What a release script answered: the hold levels left (-1: not held; 0 also when the lock was
// handed over, with the token it went with, or when its unlock message was refused).
struct release_outcome {
  std::int64_t remaining = -3;  // -3: an unexpected reply
  std::optional<std::uint64_t> handoff_token;
  std::optional<std::string> refused_publish;  // the server's words
};
release_outcome parse_release_reply(resp::value const& reply,
                                    std::optional<std::int64_t> count_before_lost_attempt);

struct client_core : std::enable_shared_from_this<client_core> {
  client_core(boost::asio::any_io_executor ex, config cfg);
  void init();  // wires the connection's handlers (needs shared_from_this)

  // The connection's strand, type-erased once (each conversion of a strand allocates).
  boost::asio::any_io_executor const& strand() const { return executor; }
  // For timers: see connection::io_executor().
  boost::asio::any_io_executor io() const { return conn.io_executor(); }

  // ---- running operations ------------------------------------------------------------------
  // Runs `op` on the strand and completes `h` with its result. With `cancellable`, the handler's
  // cancellation slot reaches the coroutine (through the strand).
  template <class... R>
  void launch(boost::asio::awaitable<std::tuple<error_code, R...>> op,
              boost::asio::any_completion_handler<void(error_code, R...)> h, bool cancellable);
  // The same for a handler already wrapped, with `cancel` (if any) forwarding its cancellation,
  // and `convert` turning the coroutine's result into the handler's arguments.
  template <class Result, class... R, class Convert>
  void launch(boost::asio::awaitable<Result> op, pending_handler<void(error_code, R...)> handler,
              std::shared_ptr<forwarded_cancellation> cancel, Convert convert);
  // A signal on the strand that the handler's cancellation slot (emitted on the caller's side)
  // reaches, and the record that it did; null if the handler has no slot.
  template <class Signature>
  std::shared_ptr<forwarded_cancellation> forward_cancellation(pending_handler<Signature>& handler);

  // acquire() and release() as the lock and held handles start them. The common case (no hold
  // yet and nobody of this client waiting; the last level and nobody waiting) is one script call
  // completed from its reply callback; anything else runs the coroutines below.
  // A release through a guard names its hold and level; one through the lock handle names
  // neither, and lets go of the innermost level this client holds for the owner, if any.
  template <class Signature>
  void start_acquire(acquire_args a, boost::asio::any_completion_handler<Signature> h);
  void start_release(std::string name, std::string owner, std::shared_ptr<hold_state> guard,
                     std::shared_ptr<hold_level> level,
                     boost::asio::any_completion_handler<void(error_code)> h);
  void release_at_once(std::string name, std::string owner, std::shared_ptr<hold_state> guard,
                       std::shared_ptr<hold_level> level, pending_handler<void(error_code)> handler);

  boost::asio::awaitable<acquire_result> acquire(acquire_args a);
  // Releases one level of `owner`'s hold. `guard` and `level` as for start_release.
  // `after_ambiguous`: an earlier attempt of this release may have gone through. A release that
  // fails while the hold lasts is retried in the background (retry_release).
  boost::asio::awaitable<std::tuple<error_code>> release(std::string name, std::string owner,
                                                         std::shared_ptr<hold_state> guard,
                                                         std::shared_ptr<hold_level> level,
                                                         bool after_ambiguous = false);
  // One release of one level up to the server's answer, ambiguous outcomes resolved. A hand-off
  // to the first local waiter is tried only when `may_hand_off`.
  boost::asio::awaitable<error_code> release_level(std::string const& name, std::string const& owner,
                                                   std::shared_ptr<hold_state> const& hold,
                                                   std::shared_ptr<hold_level> const& level,
                                                   bool after_ambiguous, bool may_hand_off);
  // Tries a failed release again, with backoff, until it goes through or the hold ends (its
  // renewal stopped with the failure unless the application holds another level).
  boost::asio::awaitable<void> retry_release(std::shared_ptr<hold_state> hold,
                                             std::shared_ptr<hold_level> level);
  boost::asio::awaitable<std::tuple<error_code, bool>> force_release(std::string name);
  boost::asio::awaitable<std::tuple<error_code, bool>> is_locked(std::string name);
  boost::asio::awaitable<std::tuple<error_code, std::int64_t>> hold_count(std::string name,
                                                                          std::string owner);
  boost::asio::awaitable<std::tuple<error_code, std::optional<std::chrono::milliseconds>>>
  remaining_lease(std::string name);
  // Applies a release's outcome to the hold and level (if this client knew them) and tells the
  // caller.
  error_code finish_release(std::string const& name, std::shared_ptr<hold_state> const& hold,
                            std::shared_ptr<hold_level> const& level, std::string const& channel,
                            release_outcome const& out, clock_type::time_point sent);
  // Releases one level in the background (a guard destroyed while holding, a grant nobody
  // wants any more).
  void release_detached(std::string name, std::string owner, std::shared_ptr<hold_state> guard,
                        std::shared_ptr<hold_level> level);
  boost::asio::awaitable<std::tuple<error_code>> wait_lost(std::shared_ptr<hold_state> hold);
  // Undoes an acquire whose outcome is unknown: releases one level if the owner's count shows it
  // went through (`count_before` is the count the owner had before that acquire).
  boost::asio::awaitable<void> undo_acquire(std::string name, std::string owner,
                                            std::int64_t count_before);

  // ---- holds ---------------------------------------------------------------------------------
  std::shared_ptr<hold_state> find_hold(std::string const& key) const;
  // A hold record for an acquire (not granted yet); `key` and `channel` as computed for `a`.
  std::shared_ptr<hold_state> new_hold(acquire_args const& a, std::string key, std::string channel);
  void grant(std::shared_ptr<hold_state> const& hold, std::uint64_t token, std::int64_t count,
             clock_type::time_point sent);
  // A guard for a new level of `hold`.
  held guard_for(std::shared_ptr<hold_state> const& hold) {
    auto level = std::make_shared<hold_level>();
    hold->levels.push_back(level);
    return held{shared_from_this(), hold, std::move(level), hold->token};
  }
  void lose(std::shared_ptr<hold_state> const& hold);
  // Fully released, or no level of it left to this client's guards.
  void finish_hold(std::shared_ptr<hold_state> const& hold);
  void forget_hold(std::shared_ptr<hold_state> const& hold);  // drop the record and its entries
  clock_type::time_point validity_deadline(clock_type::time_point sent,
                                           std::chrono::milliseconds lease) const;

  // ---- late outcomes of abandoned acquires --------------------------------------------------
  // While a key is unsettled (an acquire gave up with its script in flight), new acquires and
  // releases for it wait, so that a late grant is undone before anything else counts levels.
  void unsettle(std::string const& key);
  void settle(std::string const& key);
  boost::asio::awaitable<void> wait_settled(std::string const& key);

  // ---- watchdog ------------------------------------------------------------------------------
  void schedule_renewal(std::shared_ptr<hold_state> const& hold, clock_type::time_point base);
  void schedule_validity_check(std::shared_ptr<hold_state> const& hold);
  void arm_wheel(clock_type::time_point due);
  void on_wheel_tick();
  boost::asio::awaitable<void> renew(std::vector<std::shared_ptr<hold_state>> batch,
                                     std::chrono::milliseconds lease);

  // ---- waiting -------------------------------------------------------------------------------
  void on_push(resp::value const& push);
  void on_connected();
  void wake_first_waiter(std::string const& channel);

  // ---- events --------------------------------------------------------------------------------
  void emit(event_kind kind, event_level level, std::string_view lock, std::string_view owner = {},
            error_code ec = {}, std::string_view detail = {}) const;
  wait_queue& queue_for(std::string const& channel) { return queues[channel]; }
  void drop_queue_if_empty(std::string const& channel);

  void stop();

  connection conn;
  boost::asio::any_io_executor executor;
  boost::asio::any_completion_executor const completion_executor{executor};  // see pending_handler
  std::string id;
  std::atomic<std::uint64_t> next_owner{1};
  subscriptions subs;
  std::unordered_map<std::string, std::shared_ptr<hold_state>> holds;
  std::unordered_map<std::string, wait_queue> queues;  // by channel
  struct unsettled_key {
    explicit unsettled_key(boost::asio::any_io_executor ex) : settled{std::move(ex)} {}
    int pending = 0;
    boost::asio::steady_timer settled;
  };
  std::unordered_map<std::string, std::shared_ptr<unsettled_key>> unsettled;
  wheel_type wheel;
  boost::asio::steady_timer wheel_timer;
  std::uint64_t wheel_generation = 0;
  std::optional<clock_type::time_point> wheel_armed_for;
  bool stopped = false;

  std::atomic<std::size_t> holds_count{0};
  std::atomic<std::size_t> waiters_count{0};
  std::atomic<std::size_t> subscriptions_count{0};
  std::atomic<std::uint64_t> renewals{0};
  std::atomic<std::uint64_t> renewal_batches{0};
  std::atomic<std::uint64_t> handoffs{0};
};

std::string hold_key(std::string_view owner, std::string_view name);

// The conversion for a coroutine whose result is already the handler's arguments.
inline constexpr auto as_is = [](auto result) { return result; };

template <class Signature>
std::shared_ptr<forwarded_cancellation> client_core::forward_cancellation(
    pending_handler<Signature>& handler) {
  namespace asio = boost::asio;
  auto slot = handler.cancellation_slot();
  if (!slot.is_connected()) return nullptr;
  auto cancel = std::make_shared<forwarded_cancellation>();
  slot.assign([cancel, s = strand()](asio::cancellation_type type) {
    asio::post(s, [cancel, type] {
      cancel->emitted |= type;
      cancel->signal.emit(type);
    });
  });
  return cancel;
}

template <class Result, class... R, class Convert>
void client_core::launch(boost::asio::awaitable<Result> op,
                         pending_handler<void(error_code, R...)> handler,
                         std::shared_ptr<forwarded_cancellation> cancel, Convert convert) {
  namespace asio = boost::asio;
  auto done = [handler = std::move(handler), convert](std::exception_ptr e, Result result) mutable {
    auto args = convert(std::move(result));
    if (e) std::get<0>(args) = make_error_code(boost::system::errc::state_not_recoverable);
    std::apply([&](auto&&... a) { handler.complete(std::move(a)...); }, std::move(args));
  };
  if (!cancel) {
    asio::co_spawn(strand(), std::move(op), std::move(done));
    return;
  }
  auto slot = cancel->signal.slot();
  asio::co_spawn(strand(), std::move(op),
                 asio::bind_cancellation_slot(slot, [cancel, done = std::move(done)](
                                                        std::exception_ptr e, Result r) mutable {
                   done(e, std::move(r));
                 }));
}

template <class... R>
void client_core::launch(boost::asio::awaitable<std::tuple<error_code, R...>> op,
                         boost::asio::any_completion_handler<void(error_code, R...)> h,
                         bool cancellable) {
  pending_handler<void(error_code, R...)> handler{std::move(h), completion_executor};
  auto cancel = cancellable ? forward_cancellation(handler) : nullptr;
  launch(std::move(op), std::move(handler), std::move(cancel), as_is);
}

}  // namespace redisync::detail
