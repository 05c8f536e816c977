#include "sync/hold_acquire.hpp"

#include "sync/client_liveness.hpp"
#include "sync/grant.hpp"
#include "sync/validate.hpp"

namespace redisync::detail::sync {

using io::error_code;

hold_acquire::hold_acquire(std::string channel, std::shared_ptr<client_core> core, hold_request a,
                           handler_type handler)
      : acquire_op{core,
                 {.name = a.name,
                  .owner = a.owner,
                  .channel = std::move(channel),
                  .slot = core->router().slot_of(a.name),
                  .deadline = a.wait ? std::optional{clock_type::now() + *a.wait} : std::nullopt,
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

error_code hold_acquire::check_arguments() const {
  if (auto ec = validate_name(args().name)) return ec;
  if (auto ec = validate_owner(args().owner)) return ec;
  if (!watchdog_) {
    if (auto ec = validate_lease(lease_)) return ec;
  }
  if (wait_) return validate_wait(*wait_);
  return {};
}

bool hold_acquire::prepare() {
  hold_ = core_->find_hold(key());
  if (hold_) count_before_ = hold_->count;  // a nested acquire keeps the lease of the hold it nests in
  return hold_ != nullptr;
}

hold_state& hold_acquire::new_hold() {
  if (!hold_) {
    hold_ = sync::new_hold(args().name, args().owner, args().channel, args().slot, hold_renewal(), kind_of_hold(),
                           lease_, watchdog_);
    hold_->counted_as = *counted_as();
  }
  return *hold_;
}

// An attempt that ended with `ec` and `replies` may have granted something if its outcome is
// unknown (a lost connection, or a reply that cannot be read), or if it did grant. A server error
// reply means the script wrote nothing (each item reads before it writes).
void hold_acquire::undo_late_grant(error_code ec, io::response const& replies, std::function<void()> then) {
  bool const may_have_granted =
      ec ? ec == error::ambiguous : replies.size() != 1 || (!replies[0].is_error() && may_grant(replies[0]));
  if (!may_have_granted) return then();
  undo(std::move(then));
}

// The renewal is scheduled from the time the attempt was sent, so a reply that came late cannot
// make the first renewal late.
void hold_acquire::grant(std::uint64_t token, std::int64_t count, clock_type::time_point sent) {
  new_hold();
  grant_hold(*core_, hold_, token, count, sent);
}

bool hold_acquire::take_handoff(std::uint64_t token, clock_type::time_point sent) {
  if (too_late(sent)) return false;
  grant(token, 1, sent);
  // An attempt of this op that went out all the same is undone against the level handed over.
  count_before_ = 1;
  return true;
}

void hold_acquire::enlist_liveness() {
  if (liveness_ticket_) return;
  auto on_lapse = [weak = weak_from_this()] {
    auto self = weak.lock();
    if (!self) return;
    self->woken = true;
    self->on_wake(true);
  };
  liveness_ticket_ = core_->liveness().enlist(args().slot, std::move(on_lapse));
}

bool hold_acquire::leave_liveness() {
  if (!liveness_ticket_) return false;
  core_->liveness().leave(args().slot, *liveness_ticket_);
  liveness_ticket_.reset();
  return true;
}

std::chrono::milliseconds hold_acquire::look_after_passed_over() const {
  auto const liveness = core_->liveness().liveness();
  return liveness + liveness / 10;
}

bool hold_acquire::too_late(clock_type::time_point sent) const {
  return validity_deadline(sent, lease()) <= core_->now();
}

void hold_acquire::complete(error_code ec, bool granted) {
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

}  // namespace redisync::detail::sync
