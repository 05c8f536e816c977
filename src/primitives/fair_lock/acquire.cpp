#include "primitives/fair_lock/acquire.hpp"

#include "primitives/fair_lock/protocol.hpp"
#include "primitives/lock_protocol/protocol.hpp"
#include "sync/undo.hpp"

#include <scripts.hpp>

namespace redisync::detail::fair_protocol {

namespace asio = boost::asio;
using io::error_code;

fair_acquire::fair_acquire(std::shared_ptr<sync::client_core> core, lock_protocol::acquire_args a,
                           handler_type handler)
    : lock_acquire{lock_protocol::channel_of(a.name), std::move(core), std::move(a), std::move(handler)} {}

script const& fair_acquire::attempt_script() const { return scripts::fair_calls; }

io::outgoing fair_acquire::attempt(bool retry, bool by_digest) {
  auto const& name = args().name;
  auto& core = *this->core();
  script_args call{{name, lock_protocol::token_key_of(name), queue_key_of(name), core.liveness().alive_key(args().slot)},
                   {"acquire", args().owner, std::to_string(lease().count()),
                    count_argument(retry), core.cfg().persistent_fencing_counter ? "1" : "",
                    args().channel}};
  append_client(call, core, args().slot, true);
  return script_call(scripts::fair_calls, args().slot, call, by_digest);
}

fair_acquire::outcome fair_acquire::read(error_code ec, io::response& replies) {
  auto const o = lock_acquire::read(ec, replies);
  // Busy means queued; an unknown outcome may have queued it too. Either way this client is kept
  // alive until this waiter is done, and the waiter leaves then.
  if (o.what == outcome_kind::busy || o.what == outcome_kind::unknown) enlist_liveness();
  return o;
}

// Whatever the late attempt did, the waiter leaves the queue and gives back a level it was granted.
void fair_acquire::undo_late_grant(error_code, io::response const&, std::function<void()> then) {
  undo(std::move(then));
}

void fair_acquire::undo(std::function<void()> then) {
  auto const& name = args().name;
  // The expected count makes it safe to repeat: it releases only the level the attempt added.
  auto release = release_args(*core(), name, args().owner, core()->cfg().watchdog_lease,
                              lock_protocol::retry_argument(count_before() + 1), {}, {});
  auto undo_all = [](std::shared_ptr<sync::client_core> core, script_args release, std::string name,
                     std::string owner, std::chrono::milliseconds lease) -> asio::awaitable<void> {
    co_await leave_queue(core, name, owner);
    co_await sync::undo_with(core, scripts::fair_calls, std::move(release), std::move(name),
                             std::move(owner), lease);
  };
  core()->spawn_cleanup(undo_all(core(), std::move(release), name, args().owner, lease()), std::move(then));
}

void fair_acquire::complete(error_code ec, bool granted) {
  // A waiter that gives up leaves its place at once (the next head is called if it was the head).
  if (leave_liveness() && !granted && !core()->stopped()) {
    core()->spawn_cleanup(leave_queue(core(), args().name, args().owner));
  }
  lock_acquire::complete(ec, granted);
}

}  // namespace redisync::detail::fair_protocol
