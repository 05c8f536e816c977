#include "primitives/permits/release.hpp"

#include "primitives/permits/acquire.hpp"

#include <scripts.hpp>

namespace redisync::detail::permits_protocol {

namespace asio = boost::asio;
using io::error_code;

namespace {

class permits_hold_kind final : public sync::hold_kind {
 public:
  void release(std::shared_ptr<sync::client_core> core, std::shared_ptr<sync::hold_state> hold,
               std::shared_ptr<sync::hold_level> level, asio::any_completion_handler<void(error_code)> h) const override {
    pending_handler<void(error_code)> handler{std::move(h), core->homes()};
    auto& host = *core;
    auto op = std::make_shared<permit_release>(std::move(core), std::move(hold), std::move(level), std::move(handler));
    host.to_strand([op = std::move(op)] { op->start(); });
  }
};

permits_hold_kind const hold_kind_of_permits;

sync::release_op::params params_of(sync::client_core& core, sync::hold_state const& hold) {
  return {hold.name, hold.owner, core.router().slot_of(hold.name)};
}

}  // namespace

sync::hold_kind const& permit_hold_kind() { return hold_kind_of_permits; }

permit_release::permit_release(std::shared_ptr<sync::client_core> core, std::shared_ptr<sync::hold_state> hold,
                               std::shared_ptr<sync::hold_level> level, pending_handler<void(error_code)> handler)
    : release_op{core, params_of(*core, *hold)}, core_{std::move(core)}, hold_{std::move(hold)},
      level_{std::move(level)}, handler_{std::move(handler)}, in_progress_{core_->track()} {}

void permit_release::start() {
  if (!hold_->active()) return complete(error::lease_lost);
  auto self = std::static_pointer_cast<permit_release>(shared_from_this());
  core_->unsettled().when_settled(hold_->key, [self = std::move(self)] {
    if (!self->hold_->active()) return self->complete(error::lease_lost);
    self->core_->leases().cancel_renewal(*self->hold_);
    self->send();
  });
}

script const& permit_release::release_script() const { return scripts::permits_calls; }

io::outgoing permit_release::call(bool retry, bool by_digest) {
  repeated_ = repeated_ || retry;
  return script_call(scripts::permits_calls, args().slot, release_args(args().name, args().owner), by_digest);
}

bool permit_release::read(resp::value const& reply) {
  if (reply.kind() != resp::type::integer || (reply.integer() != 0 && reply.integer() != -1)) return false;
  outcome_ = reply.integer();
  return true;
}

bool permit_release::may_repeat() const { return hold_->active() && !core_->stopped(); }

bool permit_release::goes_on_in_background() const {
  return hold_->active() && level_->state == sync::level_state::releasing && !core_->stopped();
}

void permit_release::succeeded() {
  // Not among the holders: its lease ended first, unless an earlier call whose outcome was lost
  // gave it back.
  if (outcome_ == -1 && !repeated_) {
    core_->lose(hold_);
    return complete(error::lease_lost);
  }
  level_->state = sync::level_state::released;
  std::erase(hold_->levels, level_);
  core_->finish_hold(hold_);
  if (in_background()) core_->emit(event_kind::release_retried, event_level::info, args().name, args().owner);
  complete({});
}

void permit_release::complete(error_code ec) { handler_.complete(ec); }

}  // namespace redisync::detail::permits_protocol
