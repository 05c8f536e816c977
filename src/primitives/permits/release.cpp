#include "primitives/permits/release.hpp"

#include "primitives/permits/acquire.hpp"
#include "sync/undo.hpp"

#include <scripts.hpp>

namespace redisync::detail::permits_protocol {

namespace asio = boost::asio;
using io::error_code;

namespace {

class permits_hold_kind final : public sync::hold_kind {
 public:
  explicit permits_hold_kind(bool fair) : fair_{fair} {}
  void release(std::shared_ptr<sync::client_core> core, std::shared_ptr<sync::hold_state> hold,
               std::shared_ptr<sync::hold_level> level, asio::any_completion_handler<void(error_code)> h) const override {
    pending_handler<void(error_code)> handler{std::move(h), core->homes()};
    auto& host = *core;
    auto op = std::make_shared<permit_release>(std::move(core), std::move(hold), std::move(level), std::move(handler),
                                               fair_);
    host.to_strand([op = std::move(op)] { op->start(); });
  }
  // A permit id is never used again, so giving its permits back again frees only what it still has.
  void release_again(std::shared_ptr<sync::client_core> core, std::shared_ptr<sync::hold_state> const& hold,
                     std::string_view why) const override {
    auto release = release_args(*core, hold->name, hold->owner, fair_);
    core->spawn_cleanup(sync::undo_with(core, scripts::permits_calls, std::move(release), hold->name,
                                        hold->owner, hold->lease, std::string{why}),
                        [] {});
  }

 private:
  bool fair_;
};

// How far into the queue a release looks for a sleeping waiter to pass its permits to: past those
// whose attempts are on the way (at most about as many as there are permits).
constexpr std::size_t handoff_reach = 32;

permits_hold_kind const hold_kind_of_permits{false};
permits_hold_kind const hold_kind_of_fair_permits{true};

sync::release_op::params params_of(sync::client_core& core, sync::hold_state const& hold) {
  return {hold.name, hold.owner, core.router().slot_of(hold.name)};
}

}  // namespace

sync::hold_kind const& permit_hold_kind(bool fair) { return fair ? hold_kind_of_fair_permits : hold_kind_of_permits; }

permit_release::permit_release(std::shared_ptr<sync::client_core> core, std::shared_ptr<sync::hold_state> hold,
                               std::shared_ptr<sync::hold_level> level, pending_handler<void(error_code)> handler,
                               bool fair)
    : release_op{core, params_of(*core, *hold)}, core_{std::move(core)}, hold_{std::move(hold)},
      level_{std::move(level)}, handler_{std::move(handler)}, fair_{fair}, channel_{channel_of(hold_->name)},
      in_progress_{core_->track()} {}

void permit_release::start() {
  if (!hold_->active()) return complete(error::lease_lost);
  auto self = std::static_pointer_cast<permit_release>(shared_from_this());
  core_->unsettled().when_settled(hold_->key, [self = std::move(self)] {
    if (!self->hold_->active()) return self->complete(error::lease_lost);
    self->core_->leases().cancel_renewal(*self->hold_);
    self->choose_handoff_target();
    self->send();
  });
}

void permit_release::choose_handoff_target() {
  auto const any = [](permits_acquire const&) { return true; };
  // Fair permits go to the server's head of the queue only: this client's first waiter, if any.
  target_.choose(*core_, channel_, any, fair_ ? 1 : handoff_reach);
}

script const& permit_release::release_script() const { return scripts::permits_calls; }

io::outgoing permit_release::call(bool retry, bool by_digest) {
  repeated_ = repeated_ || retry;
  auto const& name = args().name;
  if (!target_) return script_call(scripts::permits_calls, args().slot, release_args(*core_, name, args().owner, fair_), by_digest);
  bool const keep = core_->cfg().persistent_fencing_counter;
  script_args call{{name, leases_key_of(name), holders_key_of(name), token_key_of(name)},
                   {fair_ ? "release-to-fair" : "release-to", args().owner, channel_, std::string{target_->owner()},
                    std::to_string(target_->count()), std::to_string(target_->lease().count()), keep ? "1" : ""}};
  if (fair_) {
    call.keys.push_back(queue_key_of(name));
    append_fair_client(call, *core_, args().slot);
  }
  return script_call(scripts::permits_calls, args().slot, call, by_digest);
}

bool permit_release::read(resp::value const& reply) {
  std::int64_t token = 0;
  if (reply.kind() == resp::type::array && reply.elements().size() == 2 &&
      reply.elements()[0].kind() == resp::type::integer && reply.elements()[0].integer() == 1 &&
      reply.elements()[1].is_string() && reply.elements()[1].as_integer(token) && token > 0) {
    outcome_ = 1;
    handoff_token_ = static_cast<std::uint64_t>(token);
    return true;
  }
  if (reply.kind() != resp::type::integer || (reply.integer() != 0 && reply.integer() != -1)) return false;
  outcome_ = reply.integer();
  return true;
}

bool permit_release::may_repeat() const { return hold_->active() && !core_->stopped(); }

bool permit_release::goes_on_in_background() const {
  return hold_->active() && level_->state == sync::level_state::releasing && !core_->stopped();
}

bool permit_release::ask_less() { return target_.give_back(*core_, channel_); }

void permit_release::call_failed() { target_.give_back(*core_, channel_); }

void permit_release::succeeded() {
  if (auto target = target_.take()) {
    target->handoff_pending = false;
    if (outcome_ != 1) {
      sync::give_back_handoff_target(*core_, channel_, std::move(target));
    } else if (target->done()) {
      // The waiter gave up while the permits were on their way: they go back.
      core_->spawn_cleanup(sync::undo_with(core_, scripts::permits_calls,
                                           release_args(*core_, args().name, target->owner(), fair_), args().name,
                                           std::string{target->owner()}, target->lease()),
                           [] {});
    } else {
      ++core_->queue(channel_).consecutive_handoffs;
      // Before anything else: the new holder's next command goes out first.
      if (target->take_permits(handoff_token_, sent())) {
        target->handed_over();
      } else {
        target->confirm_grant();
      }
    }
  } else if (outcome_ == 0 && core_->has_waiters(channel_)) {
    core_->queue(channel_).consecutive_handoffs = 0;
  }
  // Not among the holders: its lease ended first, unless an earlier call whose outcome was lost
  // gave it back.
  if (outcome_ == -1 && !repeated_) {
    core_->lose(hold_, loss_cause::gone);
    return complete(error::lease_lost);
  }
  level_->state = sync::level_state::released;
  std::erase(hold_->levels, level_);
  core_->finish_hold(hold_);
  core_->remember_release(hold_, sent());
  if (in_background()) core_->emit(event_kind::release_retried, event_level::info, args().name, args().owner);
  complete({});
}

void permit_release::complete(error_code ec) { handler_.complete(ec); }

}  // namespace redisync::detail::permits_protocol
