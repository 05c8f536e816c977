#include "primitives/lock/release.hpp"

#include "primitives/fair_lock/protocol.hpp"
#include "primitives/lock/acquire.hpp"
#include "primitives/rw_lock/protocol.hpp"
#include "sync/validate.hpp"

#include <scripts.hpp>

#include <boost/asio/bind_executor.hpp>

#include <array>
#include <utility>

namespace redisync::detail::lock_protocol {

namespace asio = boost::asio;
using io::error_code;

void start_release(std::shared_ptr<sync::client_core> core, std::string name, std::string owner,
                   std::shared_ptr<sync::hold_state> hold, std::shared_ptr<sync::hold_level> level,
                   asio::any_completion_handler<void(error_code)> h, lock_kind kind) {
  pending_handler<void(error_code)> handler{std::move(h), core->homes()};
  auto& host = *core;
  auto op = std::make_shared<lock_release>(std::move(core), std::move(name), std::move(owner), std::move(hold),
                                           std::move(level), std::move(handler), kind);
  host.to_strand([op = std::move(op)] { op->start(); });
}

void release_detached(std::shared_ptr<sync::client_core> core, std::string name, std::string owner,
                      std::shared_ptr<sync::hold_state> hold, std::shared_ptr<sync::hold_level> level, lock_kind kind) {
  start_release(std::move(core), std::move(name), std::move(owner), std::move(hold), std::move(level),
                asio::any_completion_handler<void(error_code)>{[](error_code) {}}, kind);
}

lock_release::lock_release(std::shared_ptr<sync::client_core> core, std::string name, std::string owner,
                           std::shared_ptr<sync::hold_state> hold, std::shared_ptr<sync::hold_level> level,
                           pending_handler<void(error_code)> handler, lock_kind kind)
    : core_{std::move(core)}, name_{std::move(name)}, owner_{std::move(owner)}, kind_{kind},
      slot_{core_->router().slot_of(name_)}, hold_{std::move(hold)}, level_{std::move(level)},
      handler_{std::move(handler)}, in_progress_{core_->track()} {}

void lock_release::start() {
  if (auto ec = sync::validate_name(name_)) return complete(ec);
  if (auto ec = sync::validate_owner(owner_)) return complete(ec);
  if (hold_ && !hold_->active()) return complete(error::lease_lost);
  auto const key = sync::hold_key(owner_, name_);
  core_->unsettled().when_settled(key, [self = shared_from_this()] { self->begin(); });
}

void lock_release::begin() {
  if (!hold_) hold_ = core_->find_hold(sync::hold_key(owner_, name_));
  if (hold_) kind_ = hold_->lock;
  switch (kind_) {
    case lock_kind::reentrant:
    case lock_kind::fair: channel_ = channel_of(name_); break;
    case lock_kind::read:
    case lock_kind::write: channel_ = rw_protocol::channel_of(name_); break;
  }
  if (hold_ && !hold_->active()) return complete(error::lease_lost);
  if (hold_ && !level_) {
    // Through the lock handle: the innermost level a guard of this client holds.
    level_ = hold_->let_go_innermost();
    if (!level_) return complete(error::not_held);
  }
  // The application lets go: no renewal may follow the release unless it holds another level.
  if (hold_ && !hold_->application_holds()) core_->leases().cancel_renewal(*hold_);
  // A fair lock hands over too, when the server finds this client's next waiter at the head of
  // its queue: one client's waiters queue in the order they joined its local queue.
  if (hold_ && hold_->count == 1 && hands_over()) choose_handoff_target();
  bool const last_here = hold_ && hold_->count == 1 && !hands_over() && !core_->keeps_hold_on(channel_) &&
                         core_->has_waiters(channel_);
  // (Before the send: a reply that fails at once may come inside it.)
  if (last_here) {
    waking_ = true;
    core_->begin_waking_release(channel_);
  }
  send();
  // A read-write lock does not hand over, but when no other hold of it is kept here, this client's
  // waiters try now, as if the unlock message had come: their attempts go out behind the release
  // on the same connection, so they run after it, a round trip sooner than the message allows.
  if (last_here) core_->queue(channel_).deliver({});
}

// The last level goes straight to the first waiter of this client, if one sleeps.
void lock_release::choose_handoff_target() {
  if (!core_->has_waiters(channel_)) return;
  auto& queue = core_->queue(channel_);
  if (queue.consecutive_handoffs >= core_->cfg().max_local_handoffs) return;
  // Every waiter of a lock's channel is a lock acquire, plain or fair: a hand-off stays within a
  // kind (a plain one would pass a fair queue by).
  auto head = std::static_pointer_cast<lock_acquire>(queue.head());
  if (!head || head->kind() != kind_ || !head->can_take_handoff()) return;
  target_ = std::move(head);
  target_->woken = false;
  target_->handoff_pending = true;
  queue.remove(*target_);
  core_->count_waiter(-1);
}

void lock_release::give_back_target() {
  auto target = std::exchange(target_, nullptr);
  target->handoff_pending = false;
  if (target->done()) return;
  core_->queue(channel_).push_front(target);
  core_->count_waiter(1);
  target->woken = true;
  target->on_wake(true);
}

void lock_release::send() {
  std::string const lease = std::to_string((hold_ ? hold_->lease : core_->cfg().watchdog_lease).count());
  bool const by_digest = loads_ < loads_per_call;
  io::outgoing out;
  if (kind_ == lock_kind::fair) {
    out = fair_call(by_digest);
  } else if (!hands_over()) {
    out = rw_call(by_digest);
  } else if (!retry_of_ && !target_) {
    std::array<std::string_view, 1> const keys{name_};
    std::array<std::string_view, 4> const argv{"release", owner_, lease, channel_};
    out = script_call(scripts::lock_calls, slot_, keys, argv, by_digest);
  } else {
    auto const& target = target_;
    std::string const token_key = token_key_of(name_);
    std::string const before = retry_of_ ? std::to_string(*retry_of_) : "";
    std::string const next_lease = target ? std::to_string(target->lease().count()) : "";
    std::array<std::string_view, 2> const keys{name_, token_key};
    bool const keep = core_->cfg().persistent_fencing_counter;
    std::array<std::string_view, 7> const argv{keep ? "release-with+" : "release-with", owner_, lease, channel_,
                                               before, target ? target->owner() : "", next_lease};
    out = script_call(scripts::lock_calls, slot_, keys, argv, by_digest);
  }
  sent_ = sync::clock_type::now();
  auto on_reply = [self = shared_from_this()](error_code ec, io::response replies) {
    self->on_reply(ec, std::move(replies));
  };
  core_->send(release_script(), slot_, std::move(out), {}, std::move(on_reply));
}

script const& lock_release::release_script() const {
  if (kind_ == lock_kind::fair) return scripts::fair_calls;
  return hands_over() ? scripts::lock_calls : scripts::rw_calls;
}

io::outgoing lock_release::fair_call(bool by_digest) const {
  auto const args = fair_protocol::release_args(
      *core_, name_, owner_, hold_ ? hold_->lease : core_->cfg().watchdog_lease, retry_of_,
      target_ ? target_->owner() : std::string_view{}, target_ ? std::optional{target_->lease()} : std::nullopt);
  return script_call(scripts::fair_calls, slot_, args, by_digest);
}

io::outgoing lock_release::rw_call(bool by_digest) const {
  // A release that frees the lock may give it to a waiting writer of another client, unless a
  // writer of this client waits: that one tries at once, behind the release.
  bool const may_grant = !(core_->has_waiters(channel_) && rw_protocol::writer_waits_in(core_->queue(channel_)));
  auto const args = rw_protocol::release_args(*core_, kind_, name_, owner_,
                                              hold_ ? hold_->lease : core_->cfg().watchdog_lease, retry_of_, may_grant);
  return script_call(scripts::rw_calls, slot_, args, by_digest);
}

void lock_release::on_reply(error_code ec, io::response replies) {
  if (std::exchange(waking_, false)) core_->end_waking_release(channel_);
  if (!ec && replies.size() == 1 && replies[0].is_error() &&
      error_from_server_text(replies[0].text()) == error::no_script) {
    ++loads_;
    core_->when_loaded(release_script(), slot_, [self = shared_from_this()](error_code lec) {
      if (lec) {
        // The waiter chosen for the hand-off would otherwise wait for it for ever.
        if (self->target_) self->give_back_target();
        return self->failed(lec);
      }
      self->send();
    });
    return;
  }
  loads_ = 0;
  release_outcome outcome;
  if (!ec) {
    if (replies.size() != 1) {
      ec = error::unexpected_reply;
    } else if (replies[0].is_error()) {
      ec = error_from_server_text(replies[0].text());
    } else {
      outcome = parse_release_reply(replies[0], retry_of_);
      // An unreadable reply leaves the outcome unknown, like a lost connection; a server that
      // keeps sending them gets the error after a few tries.
      if (outcome.remaining < -1) ec = --unreadable_left_ > 0 ? error::ambiguous : error::unexpected_reply;
    }
  }
  if (ec == error::ambiguous && hold_ && hold_->active() && !core_->stopped()) {
    retry_of_ = hold_->count;  // repeating with the count it started from is idempotent
    return send();
  }
  if (ec && target_ && ec != error::ambiguous) {
    // The server refused the hand-off (its new fencing token: out of memory, TOKENLIMIT); a plain
    // release writes nothing new. The waiter tries when the unlock message comes.
    give_back_target();
    return send();
  }
  if (ec) {
    if (target_) give_back_target();
    return failed(ec);
  }
  if (retry_of_) core_->emit(event_kind::outcome_resolved, event_level::info, name_, owner_, {}, "release");
  succeeded(outcome);
}

void lock_release::succeeded(release_outcome const& outcome) {
  std::shared_ptr<lock_acquire> new_holder;
  if (auto target = std::exchange(target_, nullptr)) {
    target->handoff_pending = false;
    if (outcome.handoff_token) {
      ++core_->handoffs;
      ++core_->queue(channel_).consecutive_handoffs;
      if (target->done()) {
        // The waiter gave up while the lock was on its way: pass it on or free it.
        release_detached(core_, name_, std::string{target->owner()}, nullptr, nullptr, kind_);
      } else {
        new_holder = std::move(target);
      }
    } else if (!target->done()) {
      core_->queue(channel_).push_front(target);
      core_->count_waiter(1);
      // A fair lock's waiter that was not the head waits to be called; a lock's tries at once.
      if (kind_ != lock_kind::fair) {
        target->woken = true;
        target->on_wake(true);
      }
    }
  }
  auto const ec = apply(outcome);
  if (new_holder) {
    // Before anything else: the new holder's next command goes out first.
    if (new_holder->take_handoff(*outcome.handoff_token, sent_)) {
      new_holder->handed_over();
    } else {
      new_holder->confirm_grant();
    }
  }
  if (background_ && !ec) core_->emit(event_kind::release_retried, event_level::info, name_, owner_);
  complete(ec);
}

void lock_release::failed(error_code ec) {
  bool const retry = hold_ && hold_->active() && level_ && level_->state == sync::level_state::releasing &&
                     !core_->stopped();
  if (!background_) {
    complete(ec);
    if (!retry) return;
    core_->emit(event_kind::release_failed, event_level::warning, name_, owner_, ec);
    background_ = true;
  }
  if (retry) retry_later();
}

void lock_release::retry_later() {
  retry_of_.reset();
  unreadable_left_ = 3;
  if (!pause_) pause_.emplace(core_->router().io_executor());
  pause_->expires_after(delay_);
  delay_ = std::min(delay_ * 2, std::chrono::milliseconds{1000});
  pause_->async_wait(asio::bind_executor(core_->strand(), [self = shared_from_this()](error_code ec) {
    if (ec || self->core_->stopped() || !self->hold_->active() ||
        self->level_->state != sync::level_state::releasing) {
      return;
    }
    self->send();
  }));
}

error_code lock_release::apply(release_outcome const& out) {
  if (!out.handoff_token && out.remaining == 0 && core_->has_waiters(channel_)) {
    core_->queue(channel_).consecutive_handoffs = 0;
  }
  if (out.remaining == -1) {
    // Nothing changed and nothing was published. If we believed we held it, the lease ran out.
    if (!hold_) return error::not_owner;
    core_->lose(hold_);
    return error::lease_lost;
  }
  if (out.refused_publish) {
    // The release stands; only other clients' waiters were not told (they wake at the PTTL).
    core_->emit(event_kind::waiters_not_notified, event_level::warning, name_, owner_, error::no_permission,
                *out.refused_publish);
    core_->wake_first_waiter(channel_);
  }
  if (!hold_) return {};
  if (level_) {
    level_->state = sync::level_state::released;
    std::erase(hold_->levels, level_);
  }
  if (out.remaining == 0 || hold_->levels.empty()) {
    // The levels left on the server, if any, belong to no guard of this client: not renewed.
    core_->finish_hold(hold_);
    return {};
  }
  hold_->count = out.remaining;
  hold_->set_valid_until(sync::validity_deadline(sent_, hold_->lease));
  if (hold_->watchdog && hold_->application_holds()) core_->leases().schedule_renewal(hold_, sent_);
  core_->leases().schedule_validity_check(hold_);
  return {};
}

void lock_release::complete(error_code ec) { handler_.complete(ec); }

}  // namespace redisync::detail::lock_protocol
