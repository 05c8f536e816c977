#include "sync/client_core.hpp"

#include "routing/make_router.hpp"
#include "sync/hold_kind.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <random>

namespace redisync::detail::sync {

namespace asio = boost::asio;

namespace {

std::string make_client_id() {
  std::random_device rd;
  std::uniform_int_distribution<std::uint32_t> dist;
  std::uint32_t const a = dist(rd), b = dist(rd), c = dist(rd), d = dist(rd);
  // A version-4 UUID: 122 random bits.
  return fmt::format("{:08x}-{:04x}-4{:03x}-{:04x}-{:04x}{:08x}", a, b >> 16, b & 0xfff,
                     (c >> 16 & 0x3fff) | 0x8000, c & 0xffff, d);
}

// An alarm on an Asio timer. A wait that was replaced or cancelled completes with an error, or after
// the alarm moved on, and rings nothing. The pending wait holds the alarm's owner.
class timer_alarm final : public alarm {
 public:
  timer_alarm(asio::any_io_executor io, asio::any_io_executor strand, std::function<void()> ring)
      : timer_{std::move(io)}, strand_{std::move(strand)}, state_{std::make_shared<shared>(std::move(ring))} {}
  ~timer_alarm() override { ++state_->generation; }

  void at(clock_type::time_point t, std::shared_ptr<void> owner) override {
    auto const generation = ++state_->generation;
    timer_.expires_at(t);
    timer_.async_wait(asio::bind_executor(strand_, [state = state_, generation, owner = std::move(owner)](error_code ec) {
      if (!ec && state->generation == generation) state->ring();
    }));
  }
  void cancel() override {
    ++state_->generation;
    timer_.cancel();
  }

 private:
  struct shared {
    explicit shared(std::function<void()> r) : ring{std::move(r)} {}
    std::function<void()> ring;
    std::uint64_t generation = 0;
  };
  asio::steady_timer timer_;
  asio::any_io_executor strand_;
  std::shared_ptr<shared> state_;
};

}  // namespace

std::shared_ptr<client_core> client_core::create(asio::any_io_executor ex, config cfg) {
  auto core = std::make_shared<client_core>(private_tag{}, std::move(ex), std::move(cfg));
  *core->self_ = core;
  return core;
}

// The connection's events and the members' pending callbacks reach this client only while it is
// alive: through `self_`, never through a pointer that could dangle.
client_core::client_core(private_tag, asio::any_io_executor ex, config cfg)
    : own_thread_{cfg.own_thread ? std::make_unique<own_thread>() : nullptr},
      cfg_{std::move(cfg)},
      application_{std::move(ex)},
      router_{routing::make_router(
          own_thread_ ? asio::any_io_executor{own_thread_->get_executor()} : application_, cfg_,
          routing::router_events{
              .push = [self = self_](resp::value const& v) {
                if (auto core = self->lock()) core->on_push(v);
              },
              .connected = [self = self_](routing::node_id node) {
                if (auto core = self->lock()) core->on_connected(node);
              },
              .event = [self = self_](event_kind k, event_level l, error_code ec, std::string_view detail) {
                if (auto core = self->lock()) core->emit(k, l, {}, {}, ec, detail);
              },
              .master_changed = [self = self_] {
                if (auto core = self->lock()) core->on_master_changed();
              }})},
      strand_{router_->group().executor()},
      runner_{*router_, [self = self_]() -> std::shared_ptr<void> { return self->lock(); },
              cfg_.mode == topology::cluster},
      channels_{subscription_io_, cfg_.subscription_linger, [self = self_]() -> std::shared_ptr<void> { return self->lock(); }},
      leases_{renewal_io_, cfg_.watchdog_tick,
              {.anchor = [self = self_]() -> std::shared_ptr<void> { return self->lock(); },
               .lose = [this](std::shared_ptr<hold_state> const& h, loss_cause why) { lose(h, why); },
               .emit = [this](event_kind k, event_level l, std::string_view lock, std::string_view owner,
                              error_code ec, std::string_view detail) { emit(k, l, lock, owner, ec, detail); }}},
      id_{make_client_id()},
      liveness_{leases_, id_, cfg_.mode == topology::cluster, cfg_.fair_waiter_liveness} {}

client_core::~client_core() = default;

bool client_core::has_waiters(std::string const& channel) const {
  auto it = queues_.find(channel);
  return it != queues_.end() && !it->second.empty();
}

void client_core::drop_queue_if_empty(std::string const& channel) {
  auto it = queues_.find(channel);
  if (it != queues_.end() && it->second.empty()) queues_.erase(it);
}

void client_core::send(script const& s, routing::slot_type slot, io::outgoing out, io::late_reply_handler late,
                       asio::any_completion_handler<void(error_code, io::response)> done) {
  runner_.send(s, slot, std::move(out), std::move(late), std::move(done));
}

// Until the deferred work has run, this client's requests wait: the tries of readers that yield
// (and any made between them) then go out in one write, merged into one script call, instead of
// one system call and one script call each. It runs after the work on its way to the strand
// (tasks resumed together ask together), yielding to it a few times at most.
void client_core::defer(std::function<void()> f) {
  router_->group().hold_writes();
  run_after_arrivals(std::move(f), 4);
}

void client_core::run_after_arrivals(std::function<void()> f, int yields) {
  asio::post(strand_, [self = shared_from_this(), f = std::move(f), yields]() mutable {
    if (yields > 0 && self->router_->group().arriving()) return self->run_after_arrivals(std::move(f), yields - 1);
    f();
    self->router_->group().release_writes();
  });
}

std::unique_ptr<alarm> client_core::make_alarm(std::function<void()> ring) {
  return std::make_unique<timer_alarm>(router_->group().io_executor(), strand_, std::move(ring));
}

// ------------------------------------------------------------------------------ work in progress

work_ticket::work_ticket(std::shared_ptr<client_core> core) : core_{std::move(core)} { ++core_->work_; }

work_ticket& work_ticket::operator=(work_ticket&& other) noexcept {
  if (this != &other) {
    reset();
    core_ = std::move(other.core_);
  }
  return *this;
}

void work_ticket::reset() {
  if (auto core = std::move(core_)) core->end_work();
}

void client_core::end_work() {
  if (--work_ == 0 && idle_wanted_) asio::post(strand_, [self = shared_from_this()] { self->run_idle_callbacks(); });
}

void client_core::when_idle(std::function<void()> f) {
  idle_callbacks_.push_back(std::move(f));
  idle_wanted_ = true;
  run_idle_callbacks();
}

void client_core::run_idle_callbacks() {
  if (work_ != 0 || idle_callbacks_.empty()) return;
  idle_wanted_ = false;
  for (auto& f : std::exchange(idle_callbacks_, {})) f();
}

void client_core::spawn_cleanup(asio::awaitable<void> task, std::function<void()> then) {
  asio::co_spawn(strand_, std::move(task), [ticket = track(), then = std::move(then)](std::exception_ptr) mutable {
    ticket.reset();
    if (then) then();
  });
}

// ------------------------------------------------------------------------------- messages

void client_core::on_push(resp::value const& push) {
  auto const e = push.elements();
  // A cluster's channels are sharded ("smessage").
  if (e.size() != 3 || !e[0].is_string() || (e[0].text() != "message" && e[0].text() != "smessage")) return;
  std::string channel{e[1].text()};
  if (e[2].text() == "0") look_at_holds_told_free(channel);  // Redisson's unlock message
  // Only Redisson's unlock messages can be a waking release's own (a grant names its writer).
  bool const unlock_message = e[2].text() == "0" || e[2].text() == "1";
  if (unlock_message && releases_waking_.contains(channel)) return;
  auto it = queues_.find(channel);
  if (it == queues_.end() || it->second.empty()) {
    channels_.drop_unwanted(channel);
    return;
  }
  it->second.deliver(e[2].text());
}

// Refusals that pass: a server loading or busy, a cluster settling (TRYAGAIN, CLUSTERDOWN) or sending
// a request back and forth past the redirect limit (MOVED, ASK: only a cluster follows them; one
// server that answers them is a cluster node behind a plain URL, which will not change).
std::chrono::milliseconds client_core::refusal_budget(error_code const& ec) const {
  bool const passes = ec == error::try_again || ec == error::cluster_down || ec == error::loading || ec == error::busy ||
                      (cfg_.mode == topology::cluster && (ec == error::moved || ec == error::ask));
  return passes ? cfg_.transient_retry_budget : std::chrono::milliseconds{0};
}

// Another master took over some slots: releases its predecessor acknowledged lately are made again
// there (idempotently), where the new master never heard of them, and so are holds lost for want
// of a grant that the new master may have (a failover back to the master that granted them).
void client_core::on_master_changed() {
  ++master_changes_;
  // A cluster names the master of each slot; a Sentinel's one master replaced them all.
  bool const by_slot = cfg_.mode == topology::cluster;
  auto const moved = [this, by_slot](routing::slot_type slot, routing::node_id node) {
    return !by_slot || router_->node_of(slot) != node;
  };
  for (auto const& [hold, why] : releases_.recent(now(), moved)) release_again(hold, why);
}

void client_core::on_connected(routing::node_id node) {
  // Messages may have been missed while disconnected: the first waiter of each queue whose lock
  // is on that node tries again (one call per lock, not a herd); the others follow as the queue
  // moves.
  for (auto& [channel, q] : queues_) {
    if (router_->node_of(router_->slot_of(channel)) == node) q.wake_one();
  }
  check_eviction_policy(node);
}

// Every lock key has a TTL, so any policy but noeviction (volatile-* included) may evict one under
// its holder, silently: the holder learns at its next renewal, another owner may take it before.
void client_core::check_eviction_policy(routing::node_id node) {
  resp::request info;
  info.push("INFO", "memory");
  auto on_reply = [self = self_](error_code ec, io::response replies) {
    auto core = self->lock();
    if (!core || ec || replies.size() != 1 || !replies[0].is_string()) return;
    auto const text = replies[0].text();
    std::string_view const field = "maxmemory_policy:";
    auto const at = text.find(field);
    if (at == std::string_view::npos) return;
    auto policy = text.substr(at + field.size());
    policy = policy.substr(0, policy.find_first_of("\r\n"));
    if (policy == "noeviction" || policy == core->eviction_reported_) return;
    core->eviction_reported_ = policy;
    core->emit(event_kind::eviction_possible, event_level::warning, {}, {}, {},
               "maxmemory-policy " + std::string{policy} + ": lock keys may be evicted under their holders");
  };
  router_->exec(router_->a_slot_of(node), io::outgoing::from(std::move(info)), {}, std::move(on_reply));
}

void client_core::emit(event_kind kind, event_level level, std::string_view lock, std::string_view owner,
                       error_code ec, std::string_view detail) const {
  metrics_.count(kind);
  if (cfg_.on_event) cfg_.on_event(event{kind, level, lock, owner, ec, detail});
}

// -------------------------------------------------------------------------------- lifecycle

void client_core::start() {
  router_->run(asio::any_completion_handler<void(error_code)>{[](error_code) {}});
}

void client_core::stop() {
  stop_requested_ = true;
  stopped_ = true;
  router_->stop();
  channels_.stop();
  leases_.stop();
  // Nothing renews or releases them any more: each hold ends here, reported lost (its key
  // expires on the server at the end of its lease).
  std::vector<std::shared_ptr<hold_state>> ending;
  for (auto const& [key, hold] : holds_) ending.push_back(hold);
  for (auto const& hold : ending) lose(hold, loss_cause::stopped);
  wake_every_waiter();
  unsettled_.release_all();
}

void client_core::begin_shutdown() {
  shutting_down_ = true;
  wake_every_waiter();
}

// A woken waiter that gives up may drop its queue: the channels are collected first.
void client_core::wake_every_waiter() {
  std::vector<std::string> channels;
  channels.reserve(queues_.size());
  for (auto const& [channel, q] : queues_) channels.push_back(channel);
  for (auto const& channel : channels) {
    if (auto it = queues_.find(channel); it != queues_.end()) it->second.wake_all();
  }
}

std::vector<std::shared_ptr<hold_state>> client_core::active_holds() const {
  std::vector<std::shared_ptr<hold_state>> out;
  for (auto const& [key, hold] : holds_) {
    if (hold->active()) out.push_back(hold);
  }
  return out;
}

metrics_snapshot client_core::take_metrics() const {
  auto out = metrics_.snapshot();
  auto const io = router_->stats();
  out.renewal_calls = leases_.renewal_calls();
  out.renewed_holds = leases_.renewals();
  out.holds = holds_count_;
  out.waiters = waiters_;
  out.subscriptions = channels_.count();
  out.connects = io.connects;
  out.round_trips = io.requests_written;
  out.socket_writes = io.writes;
  out.script_loads = runner_.loads_sent();
  out.reply_spin_hits = io.reply_spin_hits;
  out.reply_spin_misses = io.reply_spin_misses;
  out.handoffs = handoffs;
  return out;
}

std::string hold_key(std::string_view owner, std::string_view name) {
  std::string out = std::to_string(owner.size());
  out.reserve(out.size() + owner.size() + name.size() + 1);
  out += ':';
  out.append(owner);
  out.append(name);
  return out;
}

}  // namespace redisync::detail::sync
