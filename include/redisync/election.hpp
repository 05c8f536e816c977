#pragma once

// Leader election: candidates campaign, one leads at a time, and anyone can read or watch who
// leads. The leader holds a lock (the reentrant lock's layout, renewed by the watchdog like any
// hold), so leadership is a `held`: its fencing token is the term, which only grows, its status
// and wait_lost say when leadership is lost (a paused leader is told before a new term can start
// writing: fence writes with the term). Every change of leader is kept in a log in Redis (the last
// 1,000), so that observers see every change in order, also across reconnects. Cheap to make, no
// I/O; made by client::election.

#include <redisync/held.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace redisync {

namespace detail {
// What resign() takes of a leadership guard.
struct resignation {
  std::string owner;
  std::uint64_t term;
  bool leads;  // the guard held when resign() was called
  std::function<void(boost::asio::any_completion_handler<void(boost::system::error_code)>)> release;
};
}  // namespace detail

// Who leads: the term (the leader's fencing token) and the value it campaigned with.
struct leader_info {
  std::uint64_t term = 0;
  std::string value;
};

// One change of leader, as the log has it.
struct leader_change {
  enum class kind : std::uint8_t { elected, resigned };
  kind what = kind::elected;
  std::uint64_t term = 0;
  std::string value;  // the leader's (empty for a resignation)
};

// A watcher of an election's changes, in order: the first next() delivers the latest change (or
// waits for the first), each later one the change after the one it delivered. A change is never
// skipped while the log keeps it (its last 1,000): an observer that falls behind, or whose client
// reconnects, catches up from Redis. Use one observer from one task at a time.
class election_observer {
 public:
  using next_signature = void(boost::system::error_code, leader_change);

  // Waits at most `bound` for the next change: error::timeout if none came.
  template <boost::asio::completion_token_for<next_signature> Token = boost::asio::deferred_t>
  auto next(std::chrono::milliseconds bound, Token&& token = {}) {
    return boost::asio::async_initiate<Token, next_signature>(
        [core = core_, name = name_, seen = seen_, bound](auto h) {
          start_next(core, name, seen, bound, boost::asio::any_completion_handler<next_signature>{std::move(h)});
        },
        token);
  }

 private:
  friend class election;
  using core_ptr = std::shared_ptr<detail::sync::client_core>;
  election_observer(core_ptr core, std::string name)
      : core_{std::move(core)}, name_{std::move(name)}, seen_{std::make_shared<std::string>()} {}
  static void start_next(core_ptr const& core, std::string const& name, std::shared_ptr<std::string> const& seen,
                         std::chrono::milliseconds bound, boost::asio::any_completion_handler<next_signature> h);

  core_ptr core_;
  std::string name_;
  std::shared_ptr<std::string> seen_;  // the log id of the last change delivered
};

class election {
 public:
  using campaign_signature = void(boost::system::error_code, held);
  using try_campaign_signature = void(boost::system::error_code, std::optional<held>);
  using leader_signature = void(boost::system::error_code, std::optional<leader_info>);

  std::string const& name() const noexcept { return name_; }
  boost::asio::any_io_executor get_executor() const;

  // Waits until this candidate leads, with `value` for everyone to read; the leadership is held
  // with the client's watchdog lease. Each campaign is a candidate of its own.
  template <boost::asio::completion_token_for<campaign_signature> Token = boost::asio::deferred_t>
  auto campaign(std::string value, Token&& token = {}) const {
    return initiate<campaign_signature>(std::move(value), std::nullopt, std::forward<Token>(token));
  }
  // Waits at most `wait` to lead; an empty optional if another still leads by then.
  template <boost::asio::completion_token_for<try_campaign_signature> Token = boost::asio::deferred_t>
  auto try_campaign(std::string value, std::chrono::milliseconds wait, Token&& token = {}) const {
    return initiate<try_campaign_signature>(std::move(value), wait, std::forward<Token>(token));
  }

  // Gives leadership up at once: logs the resignation and releases `leadership` (as its release()
  // would), which wakes the next candidate. error::not_held if it holds nothing, error::lease_lost
  // if it was lost.
  template <boost::asio::completion_token_for<void(boost::system::error_code)> Token = boost::asio::deferred_t>
  auto resign(held& leadership, Token&& token = {}) const {
    using release_handler = boost::asio::any_completion_handler<void(boost::system::error_code)>;
    // What the operation needs of the guard, taken now: a deferred operation may outlive it.
    std::function<void(release_handler)> release = [op = leadership.release(boost::asio::deferred)](
                                                       release_handler h) mutable { std::move(op)(std::move(h)); };
    return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
        [core = core_, name = name_, owner = leadership.owner_id(), term = leadership.token(),
         leads = leadership.is_held(), release = std::move(release)](auto h) mutable {
          start_resign(core, name, {owner, term, leads, std::move(release)}, release_handler{std::move(h)});
        },
        token);
  }

  // Who leads now: nothing if nobody does (no campaign won yet, the leader resigned, or its hold
  // ended).
  template <boost::asio::completion_token_for<leader_signature> Token = boost::asio::deferred_t>
  auto leader(Token&& token = {}) const {
    return boost::asio::async_initiate<Token, leader_signature>(
        [core = core_, name = name_](auto h) {
          start_leader(core, name, boost::asio::any_completion_handler<leader_signature>{std::move(h)});
        },
        token);
  }

  election_observer observe() const { return election_observer{core_, name_}; }

 private:
  friend class client;
  using core_ptr = std::shared_ptr<detail::sync::client_core>;
  election(core_ptr core, std::string name) : core_{std::move(core)}, name_{std::move(name)} {}

  template <class Signature, class Token>
  auto initiate(std::string value, std::optional<std::chrono::milliseconds> wait, Token&& token) const {
    return boost::asio::async_initiate<Token, Signature>(
        [core = core_, name = name_, wait](auto h, std::string value) {
          start_campaign(core, name, std::move(value), wait, boost::asio::any_completion_handler<Signature>{std::move(h)});
        },
        token, std::move(value));
  }

  static void start_campaign(core_ptr const& core, std::string const& name, std::string value,
                             std::optional<std::chrono::milliseconds> wait,
                             boost::asio::any_completion_handler<campaign_signature> h);
  static void start_campaign(core_ptr const& core, std::string const& name, std::string value,
                             std::optional<std::chrono::milliseconds> wait,
                             boost::asio::any_completion_handler<try_campaign_signature> h);
  using resignation = detail::resignation;
  static void start_resign(core_ptr const& core, std::string const& name, resignation r,
                           boost::asio::any_completion_handler<void(boost::system::error_code)> h);
  static void start_leader(core_ptr const& core, std::string const& name,
                           boost::asio::any_completion_handler<leader_signature> h);

  core_ptr core_;
  std::string name_;
};

}  // namespace redisync
