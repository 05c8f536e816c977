#include "primitives/lock/acquire.hpp"

#include "primitives/lock/release.hpp"

#include "sync/held_access.hpp"
#include "sync/launch.hpp"
#include "sync/validate.hpp"

#include <scripts.hpp>


#include <array>

namespace redisync::detail::lock_protocol {

namespace asio = boost::asio;
using io::error_code;

void start_acquire(std::shared_ptr<sync::client_core> core, acquire_args a,
                   asio::any_completion_handler<acquire_signature> h) {
  sync::launch_acquire<lock_acquire>(std::move(core), std::move(a), std::move(h));
}

void start_acquire(std::shared_ptr<sync::client_core> core, acquire_args a,
                   asio::any_completion_handler<try_acquire_signature> h) {
  sync::launch_acquire<lock_acquire>(std::move(core), std::move(a), std::move(h));
}

held guard_for(std::shared_ptr<sync::client_core> const& core, std::shared_ptr<sync::hold_state> const& hold) {
  return held_access::make(core, hold, hold->add_level(), hold->token);
}

asio::awaitable<void> undo_acquire(std::shared_ptr<sync::client_core> core, std::string name, std::string owner,
                                   std::int64_t count_before, std::chrono::milliseconds lease) {
  script_args args{{name, token_key_of(name)},
                   {"release-with", owner, std::to_string(core->cfg().watchdog_lease.count()), channel_of(name),
                    std::to_string(count_before + 1), "", ""}};
  co_await undo_with(std::move(core), scripts::lock_calls, std::move(args), std::move(name), std::move(owner), lease);
}

asio::awaitable<void> undo_with(std::shared_ptr<sync::client_core> core, script const& s, script_args args,
                                std::string name, std::string owner, std::chrono::milliseconds lease,
                                std::string again) {
  auto const slot = core->router().slot_of(name);
  auto const give_up = sync::clock_type::now() + lease;
  for (;;) {
    auto [ec, reply] = co_await run_script(core->scripts(), s, slot, args);
    bool const unknown = ec == error::ambiguous || ec == error::not_connected;
    if (unknown && !core->stopped() && sync::clock_type::now() < give_up) continue;
    if (!ec && parse_release_reply(reply, std::nullopt).remaining >= 0) {
      if (again.empty()) {
        core->emit(event_kind::grant_undone, event_level::info, name, owner);
      } else {
        core->emit(event_kind::release_made_again, event_level::warning, name, owner, {}, again);
      }
    }
    co_return;
  }
}

lock_acquire::lock_acquire(std::shared_ptr<sync::client_core> core, acquire_args a, handler_type handler)
    : lock_acquire{channel_of(a.name), std::move(core), std::move(a), std::move(handler)} {}

lock_acquire::lock_acquire(std::string channel, std::shared_ptr<sync::client_core> core, acquire_args a,
                           handler_type handler)
    : acquire_op{core,
                 {.name = a.name,
                  .owner = a.owner,
                  .channel = std::move(channel),
                  .slot = core->router().slot_of(a.name),
                  .deadline = a.wait ? std::optional{sync::clock_type::now() + *a.wait} : std::nullopt,
                  .once = a.wait && a.wait->count() == 0,
                  .recheck = std::min(a.lease.value_or(core->cfg().watchdog_lease) / 3,
                                      std::chrono::milliseconds{1000}),
                  .spin = a.spin,
                  .counted = a.counted}},
      core_{std::move(core)},
      lease_{a.lease.value_or(core_->cfg().watchdog_lease)},
      watchdog_{!a.lease},
      wait_{a.wait},
      handler_{std::move(handler)},
      in_progress_{core_->track()} {}

error_code lock_acquire::check_arguments() const {
  if (auto ec = sync::validate_name(args().name)) return ec;
  if (auto ec = sync::validate_owner(args().owner)) return ec;
  if (!watchdog_) {
    if (auto ec = sync::validate_lease(lease_)) return ec;
  }
  if (wait_) return sync::validate_wait(*wait_);
  return {};
}

bool lock_acquire::prepare() {
  hold_ = core_->find_hold(key());
  if (hold_) count_before_ = hold_->count;  // a nested acquire keeps the lease of the hold it nests in
  return hold_ != nullptr;
}

std::shared_ptr<sync::hold_state> new_hold_of(std::string name, std::string owner, std::string channel,
                                              routing::slot_type slot, sync::renewal_kind const& renewal,
                                              sync::hold_kind const& kind, std::chrono::milliseconds lease,
                                              bool watchdog) {
  auto hold = std::make_shared<sync::hold_state>();
  hold->key = sync::hold_key(owner, name);
  hold->name = std::move(name);
  hold->owner = std::move(owner);
  hold->channel = std::move(channel);
  hold->slot = slot;
  hold->renewal = &renewal;
  hold->kind = &kind;
  hold->lease = lease;
  hold->watchdog = watchdog;
  return hold;
}

void grant_hold(sync::client_core& core, std::shared_ptr<sync::hold_state> const& hold, std::uint64_t token,
                std::int64_t count, sync::clock_type::time_point sent) {
  if (!hold->granted) {
    hold->token = token;
    hold->granted_at = core.now();
    hold->masters_at_grant = core.master_changes();
  }
  hold->granted = true;
  hold->count = count;
  hold->set_valid_until(sync::validity_deadline(sent, hold->lease));
  hold->status = hold_status::held;
  core.put_hold(hold);
  if (hold->watchdog) core.leases().schedule_renewal(hold, sent);
  core.leases().schedule_validity_check(hold);
}

sync::hold_state& lock_acquire::new_hold() {
  if (!hold_) {
    hold_ = new_hold_of(args().name, args().owner, args().channel, args().slot, hold_renewal(), kind_of_hold(),
                        lease_, watchdog_);
    hold_->counted_as = *counted_as();
  }
  return *hold_;
}

std::optional<primitive> lock_acquire::counted_as() const { return primitive_of(kind()); }

primitive primitive_of(lock_kind kind) {
  switch (kind) {
    case lock_kind::reentrant: return primitive::lock;
    case lock_kind::fair: return primitive::fair_lock;
    case lock_kind::read: return primitive::read_lock;
    case lock_kind::write: return primitive::write_lock;
  }
  return primitive::lock;
}

sync::hold_kind const& lock_acquire::kind_of_hold() const { return hold_kind_of(kind()); }

script const& lock_acquire::attempt_script() const { return scripts::lock_calls; }

sync::message_policy lock_acquire::policy() const { return on_message; }

io::outgoing lock_acquire::attempt(bool retry, bool by_digest) {
  std::string const lease = std::to_string(this->lease().count());
  std::string const token_key = token_key_of(args().name);
  std::array<std::string_view, 2> const keys{args().name, token_key};
  bool const keep = core_->cfg().persistent_fencing_counter;
  if (!retry) {
    std::array<std::string_view, 3> const argv{keep ? "acquire+" : "acquire", args().owner, lease};
    return script_call(scripts::lock_calls, args().slot, keys, argv, by_digest);
  }
  std::string const before = std::to_string(count_before_);
  std::array<std::string_view, 4> const argv{keep ? "retry-acquire+" : "retry-acquire", args().owner, lease, before};
  return script_call(scripts::lock_calls, args().slot, keys, argv, by_digest);
}

// An attempt that ended with `ec` and `replies` may have granted something if its outcome is
// unknown (a lost connection, or a reply that cannot be read), or if it did grant. A server error
// reply means the script wrote nothing (each item reads before it writes).
void lock_acquire::undo_late_grant(error_code ec, io::response const& replies, std::function<void()> then) {
  bool const may_have_granted =
      ec ? ec == error::ambiguous : replies.size() != 1 || (!replies[0].is_error() && may_grant(replies[0]));
  if (!may_have_granted) return then();
  undo(std::move(then));
}

bool lock_acquire::may_grant(resp::value const& reply) const {
  return read_acquire_reply(reply).what != acquire_reply::outcome::busy;
}

lock_acquire::outcome lock_acquire::read(error_code ec, io::response& replies) {
  if (ec == error::ambiguous) return {outcome_kind::unknown};
  if (ec) return {outcome_kind::failed, ec};
  if (replies.size() != 1) return {outcome_kind::unreadable};
  auto const& reply = replies[0];
  if (reply.is_error()) return {outcome_kind::failed, server_error_code(reply.text())};
  auto const answer = read_acquire_reply(reply);
  switch (answer.what) {
    case acquire_reply::outcome::held:
      // Its lease, counted from the send, ran out before the reply came (the server stalled): a
      // hold past its deadline is never returned; confirming it renews the lease.
      if (too_late(sent())) return {outcome_kind::unknown};
      grant(answer.token, answer.count, sent());
      return {outcome_kind::granted};
    case acquire_reply::outcome::busy:
      return {outcome_kind::busy, {}, std::chrono::milliseconds{answer.pttl}};
    case acquire_reply::outcome::unexpected: break;
  }
  return {outcome_kind::unreadable};
}

void lock_acquire::undo(std::function<void()> then) {
  core_->spawn_cleanup(undo_acquire(core_, args().name, args().owner, count_before_, lease()), std::move(then));
}

// The renewal is scheduled from the time the attempt was sent, so a reply that came late cannot
// make the first renewal late.
void lock_acquire::grant(std::uint64_t token, std::int64_t count, sync::clock_type::time_point sent) {
  new_hold();
  grant_hold(*core_, hold_, token, count, sent);
}

bool lock_acquire::take_handoff(std::uint64_t token, sync::clock_type::time_point sent) {
  if (too_late(sent)) return false;
  grant(token, 1, sent);
  // An attempt of this op that went out all the same is undone against the level handed over.
  count_before_ = 1;
  return true;
}

void lock_acquire::enlist_liveness() {
  if (liveness_ticket_) return;
  auto on_lapse = [weak = weak_from_this()] {
    auto self = weak.lock();
    if (!self) return;
    self->woken = true;
    self->on_wake(true);
  };
  liveness_ticket_ = core_->liveness().enlist(args().slot, std::move(on_lapse));
}

bool lock_acquire::leave_liveness() {
  if (!liveness_ticket_) return false;
  core_->liveness().leave(args().slot, *liveness_ticket_);
  liveness_ticket_.reset();
  return true;
}

std::chrono::milliseconds lock_acquire::look_after_passed_over() const {
  auto const liveness = core_->liveness().liveness();
  return liveness + liveness / 10;
}

bool lock_acquire::too_late(sync::clock_type::time_point sent) const {
  return sync::validity_deadline(sent, lease()) <= core_->now();
}

void lock_acquire::complete(error_code ec, bool granted) {
  in_progress_.reset();
  std::visit(
      [&](auto& h) {
        using handler = std::decay_t<decltype(h)>;
        if constexpr (std::is_same_v<handler, pending_handler<acquire_signature>>) {
          // acquire() holds or fails: a wait that ran out (only after a cancellation) is a timeout.
          if (granted) return h.complete({}, guard_for(core_, hold_));
          h.complete(ec ? ec : error_code{error::timeout}, held{});
        } else {
          if (granted) return h.complete({}, std::optional<held>{guard_for(core_, hold_)});
          h.complete(ec, std::nullopt);
        }
      },
      handler_);
}

}  // namespace redisync::detail::lock_protocol
