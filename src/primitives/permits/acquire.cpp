#include "primitives/permits/acquire.hpp"

#include "primitives/permits/protocol.hpp"
#include "sync/undo.hpp"

#include <scripts.hpp>

namespace redisync::detail::permits_protocol {

namespace asio = boost::asio;
using io::error_code;

void start_acquire(std::int64_t count, bool fair, std::shared_ptr<sync::client_core> core,
                   sync::hold_request a, asio::any_completion_handler<sync::acquire_signature> h) {
  sync::launch_acquire<permits_acquire>(std::move(core), std::move(a), std::move(h), count, fair);
}

void start_acquire(std::int64_t count, bool fair, std::shared_ptr<sync::client_core> core,
                   sync::hold_request a, asio::any_completion_handler<sync::try_acquire_signature> h) {
  sync::launch_acquire<permits_acquire>(std::move(core), std::move(a), std::move(h), count, fair);
}

void append_fair_client(script_args& args, sync::client_core& core, routing::slot_type slot) {
  args.argv.push_back(core.id());
  args.argv.push_back(core.liveness().alive_prefix(slot));
  args.argv.push_back(std::to_string(core.liveness().liveness().count()));
  args.argv.push_back(std::to_string(core.cfg().wait_poll_cap.count()));
}

script_args release_args(sync::client_core& core, std::string_view name, std::string_view id, bool fair) {
  script_args args{{std::string{name}, leases_key_of(name), holders_key_of(name)},
                   {fair ? "release-fair" : "release", std::string{id}, channel_of(name)}};
  if (!fair) return args;
  args.keys.push_back(queue_key_of(name));
  append_fair_client(args, core, core.router().slot_of(name));
  return args;
}

asio::awaitable<void> leave_queue(std::shared_ptr<sync::client_core> core, std::string name, std::string id) {
  auto const slot = core->router().slot_of(name);
  script_args args{{name, leases_key_of(name), holders_key_of(name), queue_key_of(name)},
                   {"leave", std::move(id), channel_of(name), core->id(), core->liveness().alive_prefix(slot)}};
  co_await run_script(core->scripts(), scripts::permits_calls, slot, args);
}

permits_acquire::permits_acquire(std::int64_t count, bool fair, std::shared_ptr<sync::client_core> core,
                                 sync::hold_request a, handler_type handler)
    : hold_acquire{channel_of(a.name), std::move(core), std::move(a), std::move(handler)}, count_{count}, fair_{fair} {}

error_code permits_acquire::check_arguments() const {
  if (count_ < 1 || count_ > most_permits) return error::invalid_argument;
  return hold_acquire::check_arguments();
}

script const& permits_acquire::attempt_script() const { return scripts::permits_calls; }

io::outgoing permits_acquire::attempt(bool retry, bool by_digest) {
  auto const& name = args().name;
  auto& core = *this->core();
  std::string op = retry ? "retry-acquire" : "acquire";
  if (fair_) op += "-fair";
  script_args call{{name, leases_key_of(name), holders_key_of(name), token_key_of(name)},
                   {std::move(op), args().owner, std::to_string(count_), std::to_string(lease().count()),
                    args().channel, core.cfg().persistent_fencing_counter ? "1" : ""}};
  if (fair_) {
    call.keys.push_back(queue_key_of(name));
    call.keys.push_back(core.liveness().alive_key(args().slot));
    append_fair_client(call, core, args().slot);
  }
  return script_call(scripts::permits_calls, args().slot, call, by_digest);
}

permits_acquire::outcome permits_acquire::read(error_code ec, io::response& replies) {
  if (ec == error::ambiguous) {
    if (fair_) enlist_liveness();  // it may have queued
    return {outcome_kind::unknown};
  }
  if (ec) return {outcome_kind::failed, ec};
  if (replies.size() != 1) return {outcome_kind::unreadable};
  auto const& reply = replies[0];
  if (reply.is_error()) return {outcome_kind::failed, server_error_code(reply.text())};
  auto const answer = read_acquire_reply(reply);
  if (!answer.read) return {outcome_kind::unreadable};
  if (!answer.granted) {
    // Queued (a fair waiter): this client is kept alive on the server until the waiter is done.
    if (fair_) enlist_liveness();
    return {outcome_kind::busy, {}, std::chrono::milliseconds{answer.bound}};
  }
  // A grant past its deadline is never returned: confirming it renews the lease.
  if (too_late(sent())) return {outcome_kind::unknown};
  grant(answer.token, count_, sent());
  return {outcome_kind::granted};
}

bool permits_acquire::take_permits(std::uint64_t token, sync::clock_type::time_point sent) {
  if (too_late(sent)) return false;
  grant(token, count_, sent);
  return true;
}

bool permits_acquire::may_grant(resp::value const& reply) const {
  auto const answer = read_acquire_reply(reply);
  return !answer.read || answer.granted;
}

void permits_acquire::undo(std::function<void()> then) {
  auto const& name = args().name;
  auto release = release_args(*core(), name, args().owner, fair_);
  auto undo_all = [](std::shared_ptr<sync::client_core> core, script_args release, std::string name, std::string id,
                     std::chrono::milliseconds lease, bool fair) -> asio::awaitable<void> {
    if (fair) co_await leave_queue(core, name, id);
    co_await sync::undo_with(core, scripts::permits_calls, std::move(release), std::move(name), std::move(id),
                             lease);
  };
  core()->spawn_cleanup(undo_all(core(), std::move(release), name, args().owner, lease(), fair_), std::move(then));
}

void permits_acquire::complete(error_code ec, bool granted) {
  // A fair waiter that gives up leaves its place at once (the next head is called if it was the head).
  if (leave_liveness() && !granted && !core()->stopped()) {
    core()->spawn_cleanup(leave_queue(core(), args().name, args().owner));
  }
  hold_acquire::complete(ec, granted);
}

}  // namespace redisync::detail::permits_protocol
