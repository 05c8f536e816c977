#include "sync/lease_registry.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include <map>
#include <tuple>

namespace redisync::detail::sync {

namespace asio = boost::asio;
using io::error_code;

lease_registry::lease_registry(renewal_io& io, std::chrono::milliseconds tick, callbacks cb)
    : io_{io}, cb_{std::move(cb)}, wheel_{tick, 512, clock_type::now()}, timer_{io.strand()} {}

void lease_registry::schedule_renewal(std::shared_ptr<hold_state> const& hold, clock_type::time_point base) {
  auto const due = base + hold->lease / 3;
  wheel_.schedule(hold->renewal_entry, due, wheel_item{hold, true});
  arm(due);
}

void lease_registry::schedule_validity_check(std::shared_ptr<hold_state> const& hold) {
  wheel_.schedule(hold->validity_entry, hold->valid_until(), wheel_item{hold, false});
  arm(hold->valid_until());
}

void lease_registry::stop() {
  stopped_ = true;
  *alive_ = false;
  timer_.cancel();
  ++generation_;
}

// Scheduling only moves the timer earlier; finding the next due entry (a scan of the wheel)
// happens once per tick.
void lease_registry::arm(clock_type::time_point due) {
  if (stopped_) return;
  due = wheel_.firing_time(due);
  if (armed_for_ && *armed_for_ <= due) return;
  armed_for_ = due;
  auto const generation = ++generation_;
  timer_.expires_at(due);
  timer_.async_wait(asio::bind_executor(io_.strand(), [this, alive = alive_, generation](error_code) {
    if (!*alive || generation_ != generation) return;
    armed_for_.reset();
    on_tick();
    if (auto next = wheel_.next_due()) arm(*next);
  }));
}

void lease_registry::on_tick() {
  auto const now = clock_type::now();
  std::vector<wheel_item> due;
  wheel_.advance(now, due);
  using group = std::tuple<renewal_kind const*, std::chrono::milliseconds, routing::slot_type>;
  std::map<group, std::vector<std::shared_ptr<hold_state>>> renewals;
  for (auto& item : due) {
    auto hold = item.hold.lock();
    // Handling one entry may end a hold whose other entry fired in this tick too (the wheel
    // forgets fired entries itself, so cancelling them does nothing).
    if (!hold || !hold->active()) continue;
    if (!item.renewal) {
      if (now >= hold->valid_until()) {
        cb_.lose(hold, loss_cause::expired);
      } else {
        schedule_validity_check(hold);  // renewed meanwhile
      }
      continue;
    }
    if (!hold->granted) {
      // The first acquire is still in flight: look again on the next tick.
      schedule_renewal(hold, now - hold->lease / 3 + wheel_.tick());
      continue;
    }
    renewals[{hold->renewal, hold->lease, hold->slot}].push_back(std::move(hold));
  }
  for (auto& [key, holds] : renewals) {
    for (std::size_t i = 0; i < holds.size(); i += renewals_per_call) {
      auto const end = std::min(holds.size(), i + renewals_per_call);
      std::vector<std::shared_ptr<hold_state>> batch(holds.begin() + static_cast<std::ptrdiff_t>(i),
                                                     holds.begin() + static_cast<std::ptrdiff_t>(end));
      asio::co_spawn(io_.strand(), renew(std::move(batch), std::get<1>(key)), asio::detached);
    }
  }
}

asio::awaitable<void> lease_registry::renew(std::vector<std::shared_ptr<hold_state>> batch,
                                            std::chrono::milliseconds lease) {
  auto const anchor = cb_.anchor();
  auto const alive = alive_;
  auto const& kind = *batch.front()->renewal;
  auto args = kind.renewal_args(batch, lease);
  auto const sent = clock_type::now();
  // While disconnected a renewal waits for the connection until the first of its holds is due to
  // end, not past it: a renewal that reached Redis after the hold was given up for lost would keep
  // the lock from others for another lease. A connection back in time gets it out first thing.
  auto first_end = clock_type::time_point::max();
  for (auto const& h : batch) first_end = std::min(first_end, h->valid_until());
  resp::request::options opts;
  opts.connection_wait = std::chrono::duration_cast<std::chrono::milliseconds>(first_end - sent);
  opts.wait_for_connection = *opts.connection_wait > std::chrono::milliseconds{0};
  // Meanwhile the holds are in danger, and say so.
  if (!io_.connected(batch.front()->slot)) {
    for (auto const& h : batch) {
      if (h->renewal->endangered_when_disconnected()) mark_uncertain(*h, error::not_connected);
    }
  }
  auto [ec, reply] = co_await io_.run(kind.renewal_script(), batch.front()->slot, std::move(args), opts);
  if (!*alive) co_return;
  ++renewal_calls_;
  renewals_ += batch.size();
  bool const well_formed =
      !ec && reply.kind() == resp::type::array && reply.elements().size() == batch.size();
  if (!well_formed) {
    auto const count = std::to_string(batch.size()) + " holds";
    cb_.emit(event_kind::renewal_failed, event_level::warning, batch.front()->name, {},
             ec ? ec : error_code{error::unexpected_reply}, count);
  }
  for (std::size_t i = 0; i < batch.size(); ++i) {
    auto const& hold = batch[i];
    if (!hold->active()) continue;  // released or lost while the renewal was in flight
    std::int64_t const flag =
        well_formed && reply.elements()[i].kind() == resp::type::integer ? reply.elements()[i].integer() : -1;
    hold->renewal->settle(*this, hold, flag, sent, ec);
  }
}

void renewal_kind::settle(lease_registry& leases, std::shared_ptr<hold_state> const& renewed, std::int64_t flag,
                          clock_type::time_point sent, io::error_code ec) const {
  leases.settle_hold(renewed, flag, sent, ec);
}

void lease_registry::settle_hold(std::shared_ptr<hold_state> const& hold, std::int64_t flag,
                                 clock_type::time_point sent, error_code ec) {
  if (flag == 1) {
    hold->set_valid_until(validity_deadline(sent, hold->lease));
    hold->status = hold_status::held;
    // Not after the application let go of it while this renewal was in flight.
    if (hold->application_holds()) schedule_renewal(hold, sent);
    schedule_validity_check(hold);
  } else if (flag == 0) {
    cb_.lose(hold, loss_cause::gone);  // the owner is gone from the server: someone deleted the lock
  } else if (flag == 3) {
    cb_.lose(hold, loss_cause::taken);
  } else if (flag == 2) {
    // Its count is past max_hold_depth (tampered with): renewing every level is refused.
    cb_.emit(event_kind::renewal_failed, event_level::error, hold->name, hold->owner, error::too_deep, {});
    cb_.lose(hold, loss_cause::gone);
  } else {
    // Unknown: the lease runs on. The hold is uncertain now and lost at its deadline unless a
    // retry gets through first.
    mark_uncertain(*hold, ec);
    auto const retry = std::min<std::chrono::milliseconds>(hold->lease / 10, std::chrono::seconds{1});
    if (hold->application_holds()) schedule_renewal(hold, clock_type::now() + retry - hold->lease / 3);
  }
}

void lease_registry::mark_uncertain(hold_state& hold, error_code ec) {
  if (!hold.active()) return;
  if (hold.status.exchange(hold_status::uncertain) == hold_status::held) {
    cb_.emit(event_kind::hold_uncertain, event_level::warning, hold.name, hold.owner, ec, {});
  }
}

}  // namespace redisync::detail::sync
