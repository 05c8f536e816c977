// The client's holds: kept by key, looked at when a message says their lock is free, lost with
// their cause, finished, and released again where a failover may have dropped their release.

#include "sync/client_core.hpp"

#include "sync/hold_kind.hpp"

#include <boost/asio/post.hpp>

namespace redisync::detail::sync {

namespace asio = boost::asio;

std::shared_ptr<hold_state> client_core::find_hold(std::string const& key) const {
  auto it = holds_.find(key);
  if (it == holds_.end() || !it->second->active()) return nullptr;
  return it->second;
}

void client_core::put_hold(std::shared_ptr<hold_state> const& hold) {
  if (auto it = holds_.find(hold->key); it != holds_.end()) {
    if (it->second == hold) return;
    auto const old = it->second;  // a copy: forgetting it erases the table's
    forget_hold(old);
  }
  std::lock_guard const guard{holds_mutex_};
  holds_.emplace(hold->key, hold);
  auto& on_channel = holds_by_channel_[hold->channel];
  on_channel.holds.emplace(hold.get(), hold);
  hold->channel_holders = on_channel.holding;
  if (hold->levels_held > 0) ++*on_channel.holding;
  holds_count_ = holds_.size();
}

void client_core::forget_hold(std::shared_ptr<hold_state> const& hold) {
  leases_.forget(*hold);
  std::lock_guard const guard{holds_mutex_};
  auto it = holds_.find(hold->key);
  if (it == holds_.end() || it->second != hold) return;
  holds_.erase(it);
  if (auto c = holds_by_channel_.find(hold->channel); c != holds_by_channel_.end()) {
    c->second.holds.erase(hold.get());
    if (c->second.holds.empty()) holds_by_channel_.erase(c);
  }
  holds_count_ = holds_.size();
}

bool client_core::keeps_hold_on(std::string const& channel) const {
  auto const c = holds_by_channel_.find(channel);
  return c != holds_by_channel_.end() && *c->second.holding > 0;
}

void client_core::end_waking_release(std::string const& channel) {
  auto it = releases_waking_.find(channel);
  if (it != releases_waking_.end() && --it->second == 0) releases_waking_.erase(it);
}

bool client_core::holds(std::string_view owner, std::string_view name) const {
  auto const key = hold_key(owner, name);
  std::lock_guard const guard{holds_mutex_};
  auto it = holds_.find(key);
  return it != holds_.end() && it->second->active() && it->second->levels_held > 0;
}

void client_core::lose_holds_of(std::string const& name) {
  std::vector<std::shared_ptr<hold_state>> gone;
  for (auto const& [key, hold] : holds_) {
    if (hold->name == name) gone.push_back(hold);
  }
  for (auto const& hold : gone) lose(hold, loss_cause::deleted);
}

// An unlock message while this client holds the lock, unless it comes from a release of this
// client's own (a level on its way out): the lock may have been deleted under the holder (a force
// release, or an expiry it has not noticed yet followed by another owner's release), or the
// message is stale (a demoted master runs what it had queued after a failover and publishes for a
// lock that its successor still gives this holder). A message is a hint, never proof: the hold is
// renewed at once where its slot is served now, and that answer keeps it or ends it. A hold with a
// fixed lease is not renewed; its deadline ends it.
void client_core::look_at_holds_told_free(std::string const& channel) {
  auto const c = holds_by_channel_.find(channel);
  if (c == holds_by_channel_.end()) return;
  for (auto const& [raw, hold] : c->second.holds) {
    bool const renewed = hold->watchdog && hold->application_holds();
    if (hold->granted && hold->active() && hold->none_releasing() && renewed) leases_.renew_soon(hold);
  }
}

namespace {

std::string_view describe(loss_cause why) {
  switch (why) {
    case loss_cause::expired: return "its validity ran out before a renewal got through";
    case loss_cause::gone: return "the server no longer has it (deleted, expired there or evicted)";
    case loss_cause::deleted: return "this client force-released the lock";
    case loss_cause::stopped: return "the client stopped while holding it";
    case loss_cause::taken: return "another owner holds the lock now";
    case loss_cause::master_changed:
      return "the master changed since it was granted, and the new master does not have it";
  }
  return {};
}

}  // namespace

void client_core::lose(std::shared_ptr<hold_state> const& hold, loss_cause why) {
  if (!hold->active()) return;
  // Gone from a master that took over since the grant: the grant had not reached it.
  if (why == loss_cause::gone && hold->masters_at_grant != master_changes_) why = loss_cause::master_changed;
  hold->status = hold_status::lost;
  count_hold_time(*hold, why);
  hold->levels.clear();
  hold->let_go_all();
  forget_hold(hold);
  emit(event_kind::hold_lost, event_level::error, hold->name, hold->owner, error::lease_lost, describe(why));
  // Given up for its deadline, the hold may still be on the server (renewals that did not get
  // through): its last level is released there, should it be, instead of waiting out its lease.
  if (why == loss_cause::expired) release_again(hold, "a hold given up for lost at its deadline");
  // Lost to a new master that lacked it: the grant is still on the old master, and a failover back
  // within its lease would bring it back held by no one, so the next change of master releases it.
  if (why == loss_cause::master_changed) {
    releases_.record(hold, now(), router_->node_of(hold->slot), release_journal::lost_to_a_new_master);
  }
  for (auto* t : std::exchange(hold->loss_timers, {})) t->cancel();
  for (auto& weak : std::exchange(hold->notifiers, {})) {
    if (auto n = weak.lock()) asio::post(n->ex, [n] { n->signal.emit(asio::cancellation_type::terminal); });
  }
  // The lock may be free now: a waiter of this client need not wait for its bound.
  wake_first_waiter(hold->channel);
}

void client_core::finish_hold(std::shared_ptr<hold_state> const& hold) {
  if (hold->active()) count_hold_time(*hold, std::nullopt);
  hold->status = hold_status::released;
  hold->count = 0;
  for (auto& level : std::exchange(hold->levels, {})) level->state = level_state::released;
  hold->let_go_all();
  forget_hold(hold);
  for (auto* t : std::exchange(hold->loss_timers, {})) t->cancel();
  hold->notifiers.clear();
}

void client_core::count_hold_time(hold_state const& hold, std::optional<loss_cause> lost) {
  // A hold whose first grant never came (an acquire in flight) was never held.
  if (hold.granted) metrics_.hold_ended(hold.counted_as, hold.name, now() - hold.granted_at, lost);
}

void client_core::wake_first_waiter(std::string const& channel) {
  if (auto it = queues_.find(channel); it != queues_.end()) it->second.wake_one();
}

void client_core::release_again(std::shared_ptr<hold_state> const& hold, std::string_view why) {
  if (hold->kind == nullptr || stop_requested_) return;
  if (auto const kept = find_hold(hold->key); kept && kept->active()) return;
  hold->kind->release_again(shared_from_this(), hold, why);
}

}  // namespace redisync::detail::sync
