#include "primitives/rw_lock/acquire.hpp"

#include "primitives/rw_lock/protocol.hpp"
#include "sync/undo.hpp"

#include <scripts.hpp>

#include <array>

namespace redisync::detail::rw_protocol {

namespace asio = boost::asio;
using io::error_code;

void start_acquire(lock_kind side, std::shared_ptr<sync::client_core> core, lock_protocol::acquire_args a,
                   asio::any_completion_handler<lock_protocol::acquire_signature> h) {
  sync::launch_acquire<rw_acquire>(std::move(core), std::move(a), std::move(h), side);
}

void start_acquire(lock_kind side, std::shared_ptr<sync::client_core> core, lock_protocol::acquire_args a,
                   asio::any_completion_handler<lock_protocol::try_acquire_signature> h) {
  sync::launch_acquire<rw_acquire>(std::move(core), std::move(a), std::move(h), side);
}

rw_acquire::rw_acquire(lock_kind side, std::shared_ptr<sync::client_core> core, lock_protocol::acquire_args a,
                       handler_type handler)
    : lock_acquire{channel_of(a.name), std::move(core), std::move(a), std::move(handler)}, side_{side} {
  goes_first = writes();  // a message lets a writer in before any reader
}

bool rw_acquire::prefer_writers() const { return core()->cfg().prefer_writers; }

sync::renewal_kind const& rw_acquire::hold_renewal() const {
  return writes() ? lock_protocol::renewal() : read_renewal();
}

bool rw_acquire::prepare() {
  if (lock_acquire::prepare()) return true;
  // A read under the owner's own write: the readers that wait here wait for that write to end.
  return !writes() && core()->find_hold(sync::hold_key(field_of(lock_kind::write, args().owner), args().name));
}

script const& rw_acquire::attempt_script() const { return scripts::rw_calls; }

sync::message_policy rw_acquire::policy() const { return on_message; }

io::outgoing rw_acquire::attempt(bool retry, bool by_digest) {
  auto const& name = args().name;
  std::string const marks = marks_key_of(name);
  std::string const lease = std::to_string(this->lease().count());
  auto& core = *this->core();
  // With writer preference, readers give way to live marks, and writers mark themselves.
  bool const marking = prefer_writers();
  std::string const client = marking ? core.id() : "";
  std::string const alive_prefix = marking ? core.liveness().alive_prefix(args().slot) : "";
  std::string const liveness = marking ? std::to_string(core.liveness().liveness().count()) : "";
  if (!writes()) {
    std::string const before = count_argument(retry);
    std::string const base = timeout_base_of(name);
    std::array<std::string_view, 3> const keys{name, marks, base};
    std::array<std::string_view, 7> const argv{"read", args().owner, lease, before, client, alive_prefix, liveness};
    return script_call(scripts::rw_calls, args().slot, keys, argv, by_digest);
  }
  marked_ = marked_ || marking;
  // A marked writer may have been given the lock since its last try: the count it had says so.
  std::string const before = count_argument(retry || marked_);
  std::string const token_key = lock_protocol::token_key_of(name);
  std::string const cap = std::to_string(core.cfg().wait_poll_cap.count());
  std::array<std::string_view, 3> const keys{name, marks, token_key};
  std::array<std::string_view, 9> const argv{"write", args().owner,   lease,        before, liveness,
                                             core.cfg().persistent_fencing_counter ? "1" : "",
                                             client,  alive_prefix,   cap};
  return script_call(scripts::rw_calls, args().slot, keys, argv, by_digest);
}

lock_protocol::lock_acquire::outcome rw_acquire::read(error_code ec, io::response& replies) {
  auto const o = lock_acquire::read(ec, replies);
  // A refused (or perhaps queued) writer's mark lives while this client does: it is kept alive
  // until the writer is done, and the mark is taken away then.
  if (marked_ && (o.what == outcome_kind::busy || o.what == outcome_kind::unknown)) enlist_liveness();
  return o;
}

// Whatever the late attempt did, a level it may have added goes back, and a writer's mark goes.
void rw_acquire::undo_late_grant(error_code, io::response const&, std::function<void()> then) {
  undo(std::move(then));
}

void rw_acquire::undo(std::function<void()> then) {
  auto const& name = args().name;
  // The expected count makes it safe to repeat: it releases only the level the attempt added.
  auto release = release_args(*core(), side_, name, args().owner, core()->cfg().watchdog_lease,
                              lock_protocol::retry_argument(count_before() + 1));
  // Once the mark is gone no release can grant the lock: the release after it undoes any grant.
  auto undo_all = [](std::shared_ptr<sync::client_core> core, script_args release, std::string name,
                     std::string owner, std::chrono::milliseconds lease, bool marked) -> asio::awaitable<void> {
    if (marked) co_await leave_marks(core, name, owner, lease, false);
    co_await sync::undo_with(core, scripts::rw_calls, std::move(release), std::move(name), std::move(owner),
                             lease);
  };
  core()->spawn_cleanup(undo_all(core(), std::move(release), name, args().owner, lease(), marked_), std::move(then));
}

// The grant's lease is short, and this client cannot tell when it began: a try of its own confirms
// it (a marked writer's try says it held nothing before) and gives it its lease.
void rw_acquire::take_grant() {
  // An attempt that is out may have run before the grant (merged into one script call with the
  // release, whose reply comes after the message): refused, it tries again and finds the grant.
  if (!can_take_handoff()) {
    woken = true;
    return;
  }
  confirm_grant();
}

void rw_acquire::complete(error_code ec, bool granted) {
  auto const& channel = args().channel;
  if (granted && !writes() && core()->has_waiters(channel)) let_readers_share(core()->queue(channel));
  // A writer that gives up takes its mark away at once: readers need not wait for it to end. A
  // grant it missed is released, unless this client holds the write (another acquire of the owner).
  if (leave_liveness() && !granted && !core()->stopped()) {
    bool const release_grant = !core()->find_hold(key());
    core()->spawn_cleanup(leave_marks(core(), args().name, args().owner, lease(), release_grant));
  }
  lock_acquire::complete(ec, granted);
}

}  // namespace redisync::detail::rw_protocol
