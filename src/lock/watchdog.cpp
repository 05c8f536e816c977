// The watchdog: one timing wheel per client drives every renewal and validity check. Renewals that
// fall due together go out as one script call per lease (in chunks), so many held locks cost a
// few commands per tick rather than one timer and one command each.

#include "lock/client_core.hpp"

#include <scripts.hpp>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/detached.hpp>

#include <map>

namespace redisync::detail {

namespace asio = boost::asio;

namespace {
constexpr std::size_t renewal_chunk = 500;  // keys per script call
}

void client_core::schedule_renewal(std::shared_ptr<hold_state> const& hold,
                                   clock_type::time_point base) {
  auto const due = base + hold->lease / 3;
  wheel.schedule(hold->renewal_entry, due, wheel_item{hold, true});
  arm_wheel(due);
}

void client_core::schedule_validity_check(std::shared_ptr<hold_state> const& hold) {
  wheel.schedule(hold->validity_entry, hold->valid_until(), wheel_item{hold, false});
  arm_wheel(hold->valid_until());
}

// Scheduling only moves the timer earlier; finding the next due entry (a scan of the wheel)
// happens once per tick.
void client_core::arm_wheel(clock_type::time_point due) {
  if (stopped) return;
  due = wheel.firing_time(due);
  if (wheel_armed_for && *wheel_armed_for <= due) return;
  wheel_armed_for = due;
  auto const generation = ++wheel_generation;
  wheel_timer.expires_at(due);
  std::weak_ptr<client_core> weak = shared_from_this();
  wheel_timer.async_wait(asio::bind_executor(strand(), [weak, generation](error_code) {
    auto self = weak.lock();
    if (!self || self->wheel_generation != generation || self->stopped) return;
    self->wheel_armed_for.reset();
    self->on_wheel_tick();
    if (auto next = self->wheel.next_due()) self->arm_wheel(*next);
  }));
}

void client_core::on_wheel_tick() {
  auto const now = clock_type::now();
  std::vector<wheel_item> due;
  wheel.advance(now, due);
  std::map<std::chrono::milliseconds, std::vector<std::shared_ptr<hold_state>>> renewals_by_lease;
  for (auto& item : due) {
    auto hold = item.hold.lock();
    // Handling one entry may end a hold whose other entry fired in this tick too (the wheel
    // forgets fired entries itself, so cancelling them does nothing).
    if (!hold || !hold->active()) continue;
    if (!item.renewal) {
      if (now >= hold->valid_until()) {
        lose(hold);
      } else {
        schedule_validity_check(hold);  // renewed meanwhile
      }
      continue;
    }
    if (!hold->granted) {
      // The first acquire is still in flight: look again on the next tick.
      schedule_renewal(hold, now - hold->lease / 3 + wheel.tick());
      continue;
    }
    renewals_by_lease[hold->lease].push_back(std::move(hold));
  }
  for (auto& [lease, holds_due] : renewals_by_lease) {
    for (std::size_t i = 0; i < holds_due.size(); i += renewal_chunk) {
      auto const end = std::min(holds_due.size(), i + renewal_chunk);
      std::vector<std::shared_ptr<hold_state>> batch(holds_due.begin() + static_cast<std::ptrdiff_t>(i),
                                                     holds_due.begin() + static_cast<std::ptrdiff_t>(end));
      asio::co_spawn(strand(), renew(std::move(batch), lease), asio::detached);
    }
  }
}

asio::awaitable<void> client_core::renew(std::vector<std::shared_ptr<hold_state>> batch,
                                         std::chrono::milliseconds lease) {
  auto self = shared_from_this();
  script_args args;
  args.keys.reserve(batch.size());
  args.argv.reserve(batch.size() + 1);
  args.argv.push_back(std::to_string(lease.count()));
  for (auto const& hold : batch) {
    args.keys.push_back(hold->name);
    args.argv.push_back(hold->owner);
  }
  auto const sent = clock_type::now();
  // While disconnected a renewal fails at once, so that the hold turns uncertain now and is
  // retried soon, instead of waiting in the queue past its deadline.
  resp::request::options const fail_fast{.wait_for_connection = false};
  auto [ec, reply] = co_await run_script(conn, scripts::lock_renew, args, {}, fail_fast);
  ++renewal_batches;
  renewals += batch.size();
  bool const well_formed = !ec && reply.kind() == resp::type::array &&
                           reply.elements().size() == batch.size();
  if (!well_formed) {
    auto const count = std::to_string(batch.size()) + " holds";
    emit(event_kind::renewal_failed, event_level::warning, batch.front()->name, {},
         ec ? ec : error_code{error::unexpected_reply}, count);
  }
  for (std::size_t i = 0; i < batch.size(); ++i) {
    auto const& hold = batch[i];
    if (!hold->active()) continue;  // released or lost while the renewal was in flight
    std::int64_t const flag = well_formed && reply.elements()[i].kind() == resp::type::integer
                                  ? reply.elements()[i].integer()
                                  : -1;
    if (flag != 0 && flag != 1) {
      // Unknown: the lease runs on. The hold is uncertain now and lost at its deadline unless a
      // retry gets through first.
      if (hold->status.exchange(hold_status::uncertain) == hold_status::held) {
        emit(event_kind::hold_uncertain, event_level::warning, hold->name, hold->owner, ec);
      }
      auto const retry = std::min<std::chrono::milliseconds>(hold->lease / 10, std::chrono::seconds{1});
      if (hold->application_holds()) schedule_renewal(hold, clock_type::now() + retry - hold->lease / 3);
      continue;
    }
    if (flag == 1) {
      hold->set_valid_until(validity_deadline(sent, hold->lease));
      hold->status = hold_status::held;
      // Not after the application let go of it while this renewal was in flight.
      if (hold->application_holds()) schedule_renewal(hold, sent);
      schedule_validity_check(hold);
    } else {
      lose(hold);  // the owner field is gone: someone deleted or took over the lock
    }
  }
}

}  // namespace redisync::detail
