#include "primitives/lock_protocol/release.hpp"

#include "primitives/lock_protocol/acquire.hpp"
#include "primitives/lock_protocol/kinds.hpp"
#include "sync/validate.hpp"

#include <scripts.hpp>

#include <boost/asio/bind_executor.hpp>

#include <array>
#include <utility>

namespace redisync::detail::lock_protocol {

namespace asio = boost::asio;
using io::error_code;

namespace {

class lock_hold_kind final : public sync::hold_kind {
 public:
  explicit lock_hold_kind(lock_kind which) : which_{which} {}
  void release(std::shared_ptr<sync::client_core> core, std::shared_ptr<sync::hold_state> hold,
               std::shared_ptr<sync::hold_level> level, asio::any_completion_handler<void(error_code)> h) const override {
    std::string name = hold->name, owner = hold->owner;
    start_release(std::move(core), std::move(name), std::move(owner), std::move(hold), std::move(level), std::move(h),
                  which_);
  }
  void release_again(std::shared_ptr<sync::client_core> core, std::shared_ptr<sync::hold_state> const& hold,
                     std::string_view why) const override {
    // Levels of other guards left on the server (a hold lost at its deadline with more than one)
    // are more than a last-level call frees: they end with the lease.
    if (hold->count > 1) return;
    auto op = std::make_shared<lock_release>(core, hold->name, hold->owner, nullptr, nullptr,
                                             pending_handler<void(error_code)>{}, which_);
    op->make_again(std::string{why}, hold->token);
    core->to_strand([op = std::move(op)] { op->start(); });
  }
  lock_kind which() const noexcept { return which_; }

 private:
  lock_kind which_;
};

// In lock_kind's order: hold_kind_of indexes it.
std::array<lock_hold_kind, 4> const hold_kinds{lock_hold_kind{lock_kind::reentrant}, lock_hold_kind{lock_kind::fair},
                                               lock_hold_kind{lock_kind::read}, lock_hold_kind{lock_kind::write}};

sync::release_op::params params_of(sync::client_core& core, std::string name, std::string owner) {
  auto const slot = core.router().slot_of(name);
  return {std::move(name), std::move(owner), slot};
}

}  // namespace

sync::hold_kind const& hold_kind_of(lock_kind kind) { return hold_kinds[static_cast<std::size_t>(kind)]; }

lock_kind lock_kind_of(sync::hold_state const& hold) {
  auto const* kind = dynamic_cast<lock_hold_kind const*>(hold.kind);
  return kind != nullptr ? kind->which() : lock_kind::reentrant;
}

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
    : release_op{core, params_of(*core, std::move(name), std::move(owner))}, core_{std::move(core)},
      kind_{kind}, hold_{std::move(hold)}, level_{std::move(level)}, handler_{std::move(handler)},
      in_progress_{core_->track()} {}

void lock_release::start() {
  auto const& [name, owner, slot] = args();
  if (auto ec = sync::validate_name(name)) return complete(ec);
  if (auto ec = sync::validate_owner(owner)) return complete(ec);
  if (hold_ && !hold_->active()) return complete(error::lease_lost);
  auto const key = sync::hold_key(owner, name);
  if (again_) {
    // Only while the owner holds nothing of the name here, and its acquires wait until it is done.
    if (core_->find_hold(key) || core_->unsettled().contains(key)) return;
    core_->unsettled().unsettle(key);
    channel_ = facts_of(kind_).channel_of(name);
    return send();
  }
  auto self = std::static_pointer_cast<lock_release>(shared_from_this());
  core_->unsettled().when_settled(key, [self = std::move(self)] { self->begin(); });
}

void lock_release::begin() {
  auto const& name = args().name;
  if (!hold_) hold_ = core_->find_hold(sync::hold_key(args().owner, name));
  if (hold_) kind_ = lock_kind_of(*hold_);
  channel_ = facts_of(kind_).channel_of(name);
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

// The last level goes straight to the first waiter of this client, if one sleeps. Every waiter of
// a lock's channel is a lock acquire, plain or fair: a hand-off stays within a kind (a plain one
// would pass a fair queue by).
void lock_release::choose_handoff_target() {
  auto const same_kind = [kind = kind_](lock_acquire const& head) {
    return head.kind() == kind && head.takes_handoffs();
  };
  target_.choose(*core_, channel_, same_kind);
}

io::outgoing lock_release::call(bool retry, bool by_digest) {
  // Every retry names the count from before the first call whose outcome was lost; a release
  // made again names the count of a last level.
  if (again_) {
    retry_of_ = 1;
  } else if (!retry) {
    retry_of_.reset();
  } else if (!retry_of_ && hold_) {
    retry_of_ = hold_->count;
  }
  auto const& [name, owner, slot] = args();
  return facts_of(kind_).release_call({.core = *core_,
                                       .name = name,
                                       .field = owner,
                                       .slot = slot,
                                       .lease = hold_ ? hold_->lease : core_->cfg().watchdog_lease,
                                       .channel = channel_,
                                       .retry = retry_argument(),
                                       .next_owner = target_ ? target_->owner() : std::string_view{},
                                       .next_lease = target_ ? std::optional{target_->lease()} : std::nullopt,
                                       .by_digest = by_digest});
}

std::string lock_release::retry_argument() const {
  bool const names_its_hold = again_ && facts_of(kind_).own_token;
  return lock_protocol::retry_argument(retry_of_, names_its_hold ? std::optional{again_token_} : std::nullopt);
}

script const& lock_release::release_script() const { return *facts_of(kind_).release_script; }

bool lock_release::hands_over() const noexcept { return facts_of(kind_).hands_over; }

void lock_release::answered() {
  if (std::exchange(waking_, false)) core_->end_waking_release(channel_);
}

bool lock_release::read(resp::value const& reply) {
  // -2: the owner had nothing left there.
  freed_again_ = again_ && !(reply.kind() == resp::type::integer && reply.integer() == -2);
  outcome_ = parse_release_reply(reply, retry_of_);
  return outcome_.remaining >= -1;
}

bool lock_release::may_repeat() const {
  // Repeating with the count it started from is idempotent.
  return hold_ && hold_->active() && !core_->stopped();
}

bool lock_release::goes_on_in_background() const {
  return hold_ && hold_->active() && level_ && level_->state == sync::level_state::releasing && !core_->stopped();
}

bool lock_release::ask_less() {
  // The server refused the hand-off (its new fencing token: out of memory, TOKENLIMIT); a plain
  // release writes nothing new. The waiter tries when the unlock message comes.
  return target_.give_back(*core_, channel_);
}

void lock_release::call_failed() {
  // The waiter chosen for the hand-off would otherwise wait for it for ever.
  target_.give_back(*core_, channel_);
}

void lock_release::succeeded() {
  if (again_) {
    if (freed_again_) core_->emit(event_kind::release_made_again, event_level::warning, args().name, args().owner, {}, *again_);
    return complete({});
  }
  std::shared_ptr<lock_acquire> new_holder;
  auto const& outcome = outcome_;
  if (auto target = target_.take()) {
    target->handoff_pending = false;
    if (outcome.handoff_token) {
      ++core_->handoffs;
      ++core_->queue(channel_).consecutive_handoffs;
      if (target->done()) {
        // The waiter gave up while the lock was on its way: pass it on or free it.
        release_detached(core_, args().name, std::string{target->owner()}, nullptr, nullptr, kind_);
      } else {
        new_holder = std::move(target);
      }
    } else if (!target->done()) {
      core_->queue(channel_).push_front(target);
      core_->count_waiter(1);
      // A fair lock's waiter that was not the head waits to be called; a lock's tries at once.
      if (!facts_of(kind_).called_in_turn) {
        target->woken = true;
        target->on_wake(true);
      }
    }
  }
  auto const ec = apply(outcome);
  if (new_holder) {
    // Before anything else: the new holder's next command goes out first.
    if (new_holder->take_handoff(*outcome.handoff_token, sent())) {
      new_holder->handed_over();
    } else {
      new_holder->confirm_grant();
    }
  }
  if (in_background() && !ec) core_->emit(event_kind::release_retried, event_level::info, args().name, args().owner);
  complete(ec);
}

error_code lock_release::apply(release_outcome const& out) {
  if (!out.handoff_token && out.remaining == 0 && core_->has_waiters(channel_)) {
    core_->queue(channel_).consecutive_handoffs = 0;
  }
  if (out.remaining == -1) {
    // Nothing changed and nothing was published. If we believed we held it, the lease ran out.
    if (!hold_) return error::not_owner;
    core_->lose(hold_, loss_cause::gone);
    return error::lease_lost;
  }
  if (out.refused_publish) {
    // The release stands; only other clients' waiters were not told (they wake at the PTTL).
    core_->emit(event_kind::waiters_not_notified, event_level::warning, args().name, args().owner, error::no_permission,
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
    if (out.remaining == 0) core_->remember_release(hold_, sent());
    return {};
  }
  hold_->count = out.remaining;
  hold_->set_valid_until(sync::validity_deadline(sent(), hold_->lease));
  if (hold_->watchdog && hold_->application_holds()) core_->leases().schedule_renewal(hold_, sent());
  core_->leases().schedule_validity_check(hold_);
  return {};
}

void lock_release::complete(error_code ec) {
  if (again_) core_->unsettled().settle(sync::hold_key(args().owner, args().name));
  handler_.complete(ec);
}

}  // namespace redisync::detail::lock_protocol
