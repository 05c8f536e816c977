#pragma once

// The watchdog: one timing wheel per client drives every renewal and validity check. Renewals that
// fall due together go out as one script call per kind, lease and slot, at most
// renewals_per_call holds each, so many held locks cost a few commands per tick rather than one
// timer and one command each, and no call keeps Redis busy long.

#include <redisync/event.hpp>

#include "script/runner.hpp"
#include "sync/hold.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <functional>
#include <optional>
#include <span>
#include <tuple>

namespace redisync::detail::sync {

// Redisson renews at most 100 locks per call too: each costs Redis a few µs.
inline constexpr std::size_t renewals_per_call = 100;

// How one kind of hold is renewed: one call of a script for many holds of one lease and slot,
// answered with one flag per hold (1 renewed, 0 gone), in the order renewal_args left them in (it
// may group them).
class lease_registry;

class renewal_kind {
 public:
  virtual ~renewal_kind() = default;
  virtual script const& renewal_script() const = 0;
  virtual script_args renewal_args(std::span<std::shared_ptr<hold_state>> holds,
                                   std::chrono::milliseconds lease) const = 0;
  // What the renewal's answer for `renewed` means (`flag`: the script's, -1 without one; `ec`: why
  // not). By default `renewed` is a hold: kept, uncertain or lost (lease_registry::settle_hold).
  virtual void settle(lease_registry& leases, std::shared_ptr<hold_state> const& renewed, std::int64_t flag,
                      clock_type::time_point sent, io::error_code ec) const;
  // Whether what it renews is in danger while its renewal waits for a connection (a hold is
  // uncertain then, and says so).
  virtual bool endangered_when_disconnected() const noexcept { return true; }
};

// Until when no other owner can hold what was held or renewed at `sent` with `lease`: the lease,
// less the clock drift between this host and Redis and the time Redis needs to expire the key.
inline clock_type::time_point validity_deadline(clock_type::time_point sent, std::chrono::milliseconds lease) {
  return sent + lease - (lease / 100 + std::chrono::milliseconds{2});
}

// What the registry needs of its client: the strand its timer and renewals run on, whether the
// node of a slot is connected, and running a renewal call. The client's is its script runner
// (runner_renewal_io); unit tests answer the calls themselves.
class renewal_io {
 public:
  virtual ~renewal_io() = default;
  virtual boost::asio::any_io_executor strand() const = 0;
  virtual bool connected(routing::slot_type slot) const = 0;
  virtual boost::asio::awaitable<std::tuple<io::error_code, resp::value>> run(script const& s, routing::slot_type slot,
                                                                            script_args args,
                                                                            resp::request::options opts) = 0;
};

class runner_renewal_io final : public renewal_io {
 public:
  explicit runner_renewal_io(script_runner& runner) : runner_{runner} {}
  boost::asio::any_io_executor strand() const override { return runner_.router().group().executor(); }
  bool connected(routing::slot_type slot) const override { return runner_.router().connected(slot); }
  boost::asio::awaitable<std::tuple<io::error_code, resp::value>> run(script const& s, routing::slot_type slot,
                                                                    script_args args,
                                                                    resp::request::options opts) override {
    co_return co_await run_script(runner_, s, slot, args, {}, opts);
  }

 private:
  script_runner& runner_;
};

class lease_registry {
 public:
  struct callbacks {
    std::function<std::shared_ptr<void>()> anchor;  // keeps the client alive while a renewal runs
    std::function<void(std::shared_ptr<hold_state> const&, loss_cause)> lose;
    std::function<void(event_kind, event_level, std::string_view lock, std::string_view owner, io::error_code,
                       std::string_view detail)>
        emit;
  };

  lease_registry(renewal_io& io, std::chrono::milliseconds tick, callbacks cb);
  ~lease_registry() { *alive_ = false; }  // a cancelled timer wait may still run
  lease_registry(lease_registry const&) = delete;
  lease_registry& operator=(lease_registry const&) = delete;

  // The next renewal a third of the lease after `base`.
  void schedule_renewal(std::shared_ptr<hold_state> const& hold, clock_type::time_point base);
  void schedule_validity_check(std::shared_ptr<hold_state> const& hold);
  // The next renewal on the next tick: a look at the hold where its slot is served now, whose
  // answer keeps it or ends it.
  void renew_soon(std::shared_ptr<hold_state> const& hold) { schedule_renewal(hold, clock_type::now() - hold->lease / 3); }
  void cancel_renewal(hold_state& hold) { wheel_.cancel(hold.renewal_entry); }
  void forget(hold_state& hold) {
    wheel_.cancel(hold.renewal_entry);
    wheel_.cancel(hold.validity_entry);
  }
  void stop();
  // A hold's renewal answered (renewal_kind::settle): 1 renewed, 0 gone (lost), 2 too deep (lost),
  // otherwise unknown (uncertain, and tried again soon).
  void settle_hold(std::shared_ptr<hold_state> const& hold, std::int64_t flag, clock_type::time_point sent,
                   io::error_code ec);

  std::uint64_t renewals() const noexcept { return renewals_; }
  std::uint64_t renewal_calls() const noexcept { return renewal_calls_; }

 private:
  void arm(clock_type::time_point due);
  void mark_uncertain(hold_state& hold, io::error_code ec);
  void on_tick();
  boost::asio::awaitable<void> renew(std::vector<std::shared_ptr<hold_state>> batch, std::chrono::milliseconds lease);

  renewal_io& io_;
  callbacks cb_;
  wheel_type wheel_;
  boost::asio::steady_timer timer_;
  std::uint64_t generation_ = 0;
  std::optional<clock_type::time_point> armed_for_;
  bool stopped_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  std::atomic<std::uint64_t> renewals_{0};
  std::atomic<std::uint64_t> renewal_calls_{0};
};

}  // namespace redisync::detail::sync
