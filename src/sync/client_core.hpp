#pragma once

// The state behind a client, all of it on its strand: the router, the script runner, the channel
// registry and wait queues, the watchdog's lease registry, unsettled keys and the table of holds.
// Every primitive's operations run against it; it is the host of their acquire loops.

#include <redisync/config.hpp>
#include <redisync/event.hpp>
#include <redisync/metrics.hpp>
#include "io/pending_handler.hpp"

#include "script/runner.hpp"
#include "script/user_script.hpp"
#include "sync/acquire_op.hpp"
#include "sync/channels.hpp"
#include "sync/client_liveness.hpp"
#include "sync/hold.hpp"
#include "sync/lease_registry.hpp"
#include "sync/own_thread.hpp"
#include "sync/release_journal.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_executor.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <typeindex>
#include <unordered_map>

namespace redisync::detail::sync {

using error_code = io::error_code;

class client_core;

// One piece of work that a graceful shutdown waits for (client_core::track): held by an acquire
// until it completes, and by the clean-up that acquires, releases and guards leave running.
class work_ticket {
 public:
  work_ticket() = default;
  explicit work_ticket(std::shared_ptr<client_core> core);
  work_ticket(work_ticket&& other) noexcept = default;
  work_ticket& operator=(work_ticket&& other) noexcept;
  ~work_ticket() { reset(); }
  void reset();

 private:
  std::shared_ptr<client_core> core_;
};

class client_core final : public wait_host, public std::enable_shared_from_this<client_core> {
  struct private_tag {};

 public:
  static std::shared_ptr<client_core> create(boost::asio::any_io_executor ex, config cfg);
  client_core(private_tag, boost::asio::any_io_executor ex, config cfg);
  ~client_core() override;

  // ---- the host of acquire loops
  clock_type::time_point now() const override { return clock_type::now(); }
  io::error_code closed() const override {
    if (stopped_) return error::not_connected;
    return shutting_down_ ? io::error_code{error::shutting_down} : io::error_code{};
  }
  bool stopped() const { return stopped_; }
  // From any thread, at once: a stop is on its way (client::stop), so every hold counts as lost
  // before the strand gets to it.
  void request_stop() noexcept { stop_requested_ = true; }
  bool stop_requested() const noexcept { return stop_requested_; }
  std::chrono::milliseconds wait_poll_cap() const override { return cfg_.wait_poll_cap; }
  std::chrono::milliseconds refusal_budget(io::error_code const& ec) const override;
  unsettled_keys& unsettled() override { return unsettled_; }
  waiter_queue& queue(std::string const& channel) override { return queues_[channel]; }
  bool has_waiters(std::string const& channel) const override;
  void drop_queue_if_empty(std::string const& channel) override;
  void count_waiter(int delta) override { waiters_ += static_cast<std::size_t>(delta); }
  void send(script const& s, routing::slot_type slot, io::outgoing out, io::late_reply_handler late,
            boost::asio::any_completion_handler<void(error_code, io::response)> done) override;
  void when_loaded(script const& s, routing::slot_type slot, std::function<void(error_code)> then) override {
    runner_.when_loaded(s, slot, std::move(then));
  }
  void subscribe(std::string const& channel, routing::slot_type slot,
                 std::function<void(error_code)> confirmed) override {
    channels_.acquire(channel, slot, std::move(confirmed));
  }
  void unsubscribe(std::string const& channel) override { channels_.release(channel); }
  std::unique_ptr<alarm> make_alarm(std::function<void()> ring) override;
  void defer(std::function<void()> f) override;

  // ---- work in progress, which a graceful shutdown lets finish before it releases the holds
  work_ticket track() { return work_ticket{shared_from_this()}; }
  // Runs a clean-up task (undoing a late grant, leaving a queue) on the strand, tracked; `then`
  // runs when it ended.
  void spawn_cleanup(boost::asio::awaitable<void> task, std::function<void()> then = {});
  // Calls `f` on the strand once no ticket is out (at once if none is).
  void when_idle(std::function<void()> f);

  // ---- the rest of the client
  config const& cfg() const noexcept { return cfg_; }
  routing::router& router() noexcept { return *router_; }
  script_runner& scripts() noexcept { return runner_; }
  // An application's script, kept while the client lives: the runner loads what it used again
  // after each reconnect.
  script const& keep_script(std::shared_ptr<user_script const> const& s) {
    return user_scripts_.try_emplace(s->sha1, s).first->second->view;
  }
  channels& subscriptions() noexcept { return channels_; }
  lease_registry& leases() noexcept { return leases_; }
  client_liveness& liveness() noexcept { return liveness_; }
  boost::asio::any_io_executor const& strand() const noexcept { return strand_; }
  // The executor the client was made with: the application's handlers that name no executor of
  // their own complete there.
  boost::asio::any_io_executor const& application_executor() const noexcept { return application_; }
  completion_homes const& homes() const noexcept { return homes_; }
  // The application's handler for a layer below that completes unbound handlers on the strand:
  // bound to its own executor, or the client's.
  template <class Signature>
  boost::asio::any_completion_handler<Signature> for_application(boost::asio::any_completion_handler<Signature> h) const {
    auto ex = boost::asio::get_associated_executor(h, homes_.fallback);
    return boost::asio::bind_executor(std::move(ex), std::move(h));
  }
  // Runs `f` on the strand (io::hop_in).
  template <class F>
  void to_strand(F f) {
    if (router_->group().on_strand()) return f();
    io::hop_in(shared_from_this(), strand_, *homes_.delivery, std::move(f));
  }
  void begin_arrival() noexcept { router_->group().begin_arrival(); }
  void end_arrival() { router_->group().end_arrival(); }
  // With config::own_thread: lets its work finish within `limit`, then joins it.
  void finish_own_thread(std::chrono::milliseconds limit) {
    if (own_thread_) own_thread_->finish(limit);
  }
  std::string const& id() const noexcept { return id_; }
  std::uint64_t next_owner_number() noexcept { return next_owner_++; }

  // The hold table. Changed only on the strand; holds() reads it from any thread.
  std::shared_ptr<hold_state> find_hold(std::string const& key) const;
  void put_hold(std::shared_ptr<hold_state> const& hold);
  // Whether `owner` holds `name` as far as this client knows, without I/O (any thread).
  bool holds(std::string_view owner, std::string_view name) const;
  // The lock of `name` was deleted (this client's force_release): every hold of it here is lost.
  void lose_holds_of(std::string const& name);
  // Lost: reported through status, wait_lost and loss slots; the lock may be free, so the first
  // waiter of this client tries.
  void lose(std::shared_ptr<hold_state> const& hold, loss_cause why);
  // How many times another node became master of some slots, as the router told (strand only).
  std::uint64_t master_changes() const noexcept { return master_changes_; }
  // Fully released, or no level of it left to this client's guards.
  void finish_hold(std::shared_ptr<hold_state> const& hold);
  // The server acknowledged the release of the last level of `hold`, sent at `sent`: kept for
  // the failover window (release_journal).
  void remember_release(std::shared_ptr<hold_state> const& hold, clock_type::time_point sent) {
    releases_.record(hold, sent, router_->node_of(hold->slot));
  }
  void wake_first_waiter(std::string const& channel);
  // What a primitive keeps per client (the permits each owner took of a Redisson semaphore, say):
  // one `Books` each, made at first use, on the strand.
  template <class Books>
  Books& books() {
    auto& kept = books_[std::type_index{typeid(Books)}];
    if (!kept) kept = std::make_shared<Books>();
    return *static_cast<Books*>(kept.get());
  }
  // Whether the application keeps a level of any hold of this client that `channel` concerns
  // (levels on their way to being released do not count).
  bool keeps_hold_on(std::string const& channel) const;
  // A release that woke this client's waiters as it was sent: until its reply, a message on the
  // channel was published by it or before it, and would only wake waiters that tried after it.
  void begin_waking_release(std::string const& channel) { ++releases_waking_[channel]; }
  void end_waking_release(std::string const& channel);

  void emit(event_kind kind, event_level level, std::string_view lock, std::string_view owner = {},
            error_code ec = {}, std::string_view detail = {}) const override;

  // Runs the connections until stop() or a fatal error; start() without waiting for that.
  void run(boost::asio::any_completion_handler<void(error_code)> h) { router_->run(std::move(h)); }
  void start();
  void stop();
  // The first step of a shutdown: acquires, waiting or new, fail with error::shutting_down.
  void begin_shutdown();
  // Every hold of this client that is not lost.
  std::vector<std::shared_ptr<hold_state>> active_holds() const;
  metrics::metrics_registry& metrics() override { return metrics_; }
  metrics_snapshot take_metrics() const;

  std::atomic<std::uint64_t> handoffs{0};

 private:
  void on_push(resp::value const& push);
  void on_connected(routing::node_id node);
  void on_master_changed();
  // hold_kind::release_again, unless this client holds the name for the owner again.
  void release_again(std::shared_ptr<hold_state> const& hold, std::string_view why);
  void check_eviction_policy(routing::node_id node);
  void forget_hold(std::shared_ptr<hold_state> const& hold);
  void count_hold_time(hold_state const& hold, std::optional<loss_cause> lost);
  void look_at_holds_told_free(std::string const& channel);
  void wake_every_waiter();
  void run_after_arrivals(std::function<void()> f, int yields);
  friend class work_ticket;
  void end_work();
  void run_idle_callbacks();

  // With config::own_thread; first, so that its io_context outlives the sockets and timers made
  // with it.
  std::unique_ptr<own_thread> own_thread_;
  // This client, for callbacks that run after it may be gone (set by create()). Made before the
  // members whose callbacks use it.
  std::shared_ptr<std::weak_ptr<client_core>> self_ = std::make_shared<std::weak_ptr<client_core>>();
  config cfg_;
  // Counted from emit(), which is const: the registry is all atomics and a mutex.
  mutable metrics::metrics_registry metrics_{cfg_.metrics_group_separator, cfg_.metrics_group_limit};
  boost::asio::any_io_executor application_;
  std::shared_ptr<routing::router> router_;
  boost::asio::any_io_executor strand_;
  completion_homes const homes_{strand_, application_, router_->group().completions(),
                                application_ == router_->group().io_executor()};  // see pending_handler
  script_runner runner_;
  runner_renewal_io renewal_io_{runner_};
  router_subscription_io subscription_io_{*router_};
  channels channels_;
  lease_registry leases_;
  release_journal releases_{cfg_.failover_window};
  unsettled_keys unsettled_;
  std::unordered_map<std::string, waiter_queue> queues_;
  std::unordered_map<std::string, int> releases_waking_;  // by channel
  std::unordered_map<std::string, std::shared_ptr<hold_state>> holds_;
  mutable std::mutex holds_mutex_;  // for holds() off the strand
  // By channel, then by hold: a release forgets its hold, and asks whether another is held, in
  // O(1) however many share the channel (10,000 readers of one lock).
  struct channel_holds {
    std::unordered_map<hold_state const*, std::shared_ptr<hold_state>> holds;
    std::shared_ptr<std::atomic<int>> holding = std::make_shared<std::atomic<int>>(0);  // see hold_state
  };
  std::unordered_map<std::string, channel_holds> holds_by_channel_;
  std::unordered_map<std::string, std::shared_ptr<user_script const>> user_scripts_;  // by SHA1
  std::unordered_map<std::type_index, std::shared_ptr<void>> books_;
  std::string id_;
  client_liveness liveness_;
  std::atomic<std::uint64_t> next_owner_{1};
  std::string eviction_reported_;  // the eviction policy last reported (event eviction_possible)
  std::uint64_t master_changes_ = 0;
  bool stopped_ = false;
  std::atomic<bool> stop_requested_{false};
  bool shutting_down_ = false;
  std::atomic<std::size_t> holds_count_{0};
  std::atomic<std::size_t> waiters_{0};
  // Tickets are given back on any thread (a guard's release may end where its io_context is
  // destroyed); the callbacks run on the strand.
  std::atomic<std::size_t> work_{0};
  std::atomic<bool> idle_wanted_{false};
  std::vector<std::function<void()>> idle_callbacks_;
};

}  // namespace redisync::detail::sync
