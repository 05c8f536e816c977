#include "primitives/fair_lock/acquire.hpp"

#include "primitives/fair_lock/protocol.hpp"

#include <scripts.hpp>


#include <array>

namespace redisync::detail::fair_protocol {

namespace asio = boost::asio;
using io::error_code;

void start_acquire(std::shared_ptr<sync::client_core> core, lock_protocol::acquire_args a,
                   asio::any_completion_handler<lock_protocol::acquire_signature> h) {
  lock_protocol::launch_acquire<fair_acquire>(std::move(core), std::move(a), std::move(h));
}

void start_acquire(std::shared_ptr<sync::client_core> core, lock_protocol::acquire_args a,
                   asio::any_completion_handler<lock_protocol::try_acquire_signature> h) {
  lock_protocol::launch_acquire<fair_acquire>(std::move(core), std::move(a), std::move(h));
}

fair_acquire::fair_acquire(std::shared_ptr<sync::client_core> core, lock_protocol::acquire_args a,
                           handler_type handler)
    : lock_acquire{channel_of(a.name), std::move(core), std::move(a), std::move(handler)} {}

script const& fair_acquire::attempt_script() const { return scripts::fair_calls; }

sync::message_policy fair_acquire::policy() const { return on_message; }

io::outgoing fair_acquire::attempt(bool retry, bool by_digest) {
  auto const& name = args().name;
  std::string const token_key = lock_protocol::token_key_of(name);
  std::string const queue = queue_key_of(name);
  std::string const alive = alive_key_of(name);
  std::array<std::string_view, 4> const keys{name, token_key, queue, alive};
  std::string const lease = std::to_string(this->lease().count());
  std::string const liveness = std::to_string(core()->cfg().fair_waiter_liveness.count());
  std::string const before = retry ? std::to_string(count_before()) : "";
  std::array<std::string_view, 6> const argv{"acquire", args().owner, lease, liveness, before,
                                             core()->cfg().persistent_fencing_counter ? "1" : ""};
  return script_call(scripts::fair_calls, args().slot, keys, argv, by_digest);
}

fair_acquire::outcome fair_acquire::read(error_code ec, io::response& replies) {
  auto const o = lock_acquire::read(ec, replies);
  // Busy means queued; an unknown outcome may have queued it too. Either way the place is kept
  // alive until this waiter is done, and left then.
  if (o.what == outcome_kind::busy || o.what == outcome_kind::unknown) keep_place();
  return o;
}

// Whatever the late attempt did, the waiter leaves the queue and gives back a level it was granted.
void fair_acquire::undo_late_grant(error_code, io::response const&, std::function<void()> then) {
  undo(std::move(then));
}

void fair_acquire::undo(std::function<void()> then) {
  auto const& name = args().name;
  // The expected count makes it safe to repeat: it releases only the level the attempt added.
  auto release = release_args(name, args().owner, core()->cfg().watchdog_lease, count_before() + 1, {}, {}, false);
  auto undo_all = [](std::shared_ptr<sync::client_core> core, script_args release, std::string name,
                     std::string owner, std::chrono::milliseconds lease) -> asio::awaitable<void> {
    co_await leave_queue(core, name, owner);
    co_await lock_protocol::undo_with(core, scripts::fair_calls, std::move(release), std::move(name),
                                      std::move(owner), lease);
  };
  core()->spawn_cleanup(undo_all(core(), std::move(release), name, args().owner, lease()), std::move(then));
}

void fair_acquire::complete(error_code ec, bool granted) {
  if (place_) {
    core()->leases().forget(*place_);
    place_.reset();
    // A waiter that gives up leaves its place at once (the next head is called if it was the head).
    if (!granted && !core()->stopped()) core()->spawn_cleanup(leave_queue(core(), args().name, args().owner));
  }
  lock_acquire::complete(ec, granted);
}

void fair_acquire::keep_place() {
  if (place_) return;
  place_ = std::make_shared<sync::hold_state>();
  place_->name = args().name;
  place_->owner = args().owner;
  place_->slot = args().slot;
  place_->kind = &heartbeat();
  place_->lease = core()->cfg().fair_waiter_liveness;
  place_->watchdog = true;
  place_->granted = true;
  place_->set_valid_until(sent() + place_->lease);
  place_->on_beat = [weak = weak_from_this()](std::int64_t flag) {
    if (auto self = weak.lock()) std::static_pointer_cast<fair_acquire>(self)->on_beat(flag);
  };
  core()->leases().schedule_renewal(place_, sent());
}

// 2: the head, and the lock is free (its call was lost); 0: the place is gone (a server restart):
// either way the waiter tries again, which takes the lock or queues it anew.
void fair_acquire::on_beat(std::int64_t flag) {
  if (flag != 0 && flag != 2) return;
  woken = true;
  on_wake(true);
}

}  // namespace redisync::detail::fair_protocol
