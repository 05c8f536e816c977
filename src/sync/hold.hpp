#pragma once

// A hold: what a client holds of one primitive for one owner (a lock, a read or write side), with
// its lease, validity deadline and loss listeners, and one level per guard of the application.
// Shared by the guards, the watchdog and the operations; its atomics are read from any thread,
// everything else only on the client's strand.

#include <redisync/held.hpp>
#include <redisync/metrics.hpp>

#include "routing/router.hpp"
#include "sync/timing_wheel.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace redisync::detail::sync {

using clock_type = std::chrono::steady_clock;

class hold_kind;
class renewal_kind;

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

struct loss_notifier {
  explicit loss_notifier(boost::asio::any_io_executor e) : ex{std::move(e)} {}
  boost::asio::cancellation_signal signal;
  boost::asio::any_io_executor ex;
};

struct hold_state;
struct wheel_item {
  std::weak_ptr<hold_state> hold;
  bool renewal;  // false: a validity check
};
using wheel_type = timing_wheel<wheel_item>;

struct hold_state {
  std::string name;
  std::string owner;
  std::string key;      // of the client's hold table: owner and name
  std::string channel;  // where its waiters listen
  routing::slot_type slot = 0;
  renewal_kind const* renewal = nullptr;
  hold_kind const* kind = nullptr;  // says how its levels are released (none for a liveness beat)
  std::uint64_t token = 0;
  std::int64_t count = 0;  // hold levels, as the server last reported them
  std::chrono::milliseconds lease{};
  bool watchdog = false;
  bool granted = false;  // false while the first acquire is in flight (watchdog already armed)
  primitive counted_as = primitive::lock;  // in the metrics
  clock_type::time_point granted_at{};     // of the first grant: the hold time ends at its release or loss
  std::uint64_t masters_at_grant = 0;      // the client's count of master changes at the first grant
  std::atomic<std::int64_t> valid_until_ns{0};
  std::atomic<hold_status> status{hold_status::held};
  wheel_type::handle renewal_entry;
  wheel_type::handle validity_entry;
  std::vector<boost::asio::steady_timer*> loss_timers;  // wait_lost() calls, woken on any end
  std::vector<std::weak_ptr<loss_notifier>> notifiers;
  // The levels of this hold's guards, outermost first, until the server confirmed their release.
  std::vector<std::shared_ptr<hold_level>> levels;
  // How many of them the application still holds: read without the strand (owner::holds).
  std::atomic<int> levels_held{0};
  // How many holds of this client on this hold's channel the application holds a level of (set
  // while the client keeps the hold): a release asks it in O(1) however many share the channel.
  std::shared_ptr<std::atomic<int>> channel_holders;

  clock_type::time_point valid_until() const {
    return clock_type::time_point{clock_type::duration{valid_until_ns.load()}};
  }
  void set_valid_until(clock_type::time_point t) { valid_until_ns.store(t.time_since_epoch().count()); }
  bool active() const {
    auto const s = status.load();
    return s == hold_status::held || s == hold_status::uncertain;
  }
  // Whether the application still holds a level: only then is the hold renewed.
  bool application_holds() const {
    return std::any_of(levels.begin(), levels.end(), [](auto const& l) { return l->state == level_state::held; });
  }
  std::shared_ptr<hold_level> add_level() {
    auto level = std::make_shared<hold_level>();
    levels.push_back(level);
    if (levels_held++ == 0 && channel_holders) ++*channel_holders;
    return level;
  }
  // Lets go of `level` (from any thread) unless someone did first.
  bool let_go(hold_level& level) {
    if (!level.let_go()) return false;
    if (--levels_held == 0 && channel_holders) --*channel_holders;
    return true;
  }
  // The application holds no level any more: the hold ended.
  void let_go_all() {
    if (levels_held.exchange(0) > 0 && channel_holders) --*channel_holders;
  }
  // Lets go of the innermost level the application holds (a release through the lock handle).
  std::shared_ptr<hold_level> let_go_innermost() {
    for (auto it = levels.rbegin(); it != levels.rend(); ++it) {
      if (let_go(**it)) return *it;
    }
    return nullptr;
  }
  // No level is on its way to being released.
  bool none_releasing() const {
    return std::none_of(levels.begin(), levels.end(), [](auto const& l) { return l->state == level_state::releasing; });
  }
};

// The key of a hold in the client's table: the owner's length first, so that no owner/name pair
// collides with another.
std::string hold_key(std::string_view owner, std::string_view name);

}  // namespace redisync::detail::sync
