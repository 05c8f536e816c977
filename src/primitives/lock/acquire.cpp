#include "primitives/lock/acquire.hpp"

#include "primitives/lock/kinds.hpp"
#include "primitives/lock/release.hpp"
#include "sync/launch.hpp"
#include "sync/undo.hpp"
#include "sync/validate.hpp"

#include <scripts.hpp>

#include <array>

namespace redisync::detail::lock_protocol {

namespace asio = boost::asio;
using io::error_code;

void start_acquire(std::shared_ptr<sync::client_core> core, acquire_args a,
                   asio::any_completion_handler<acquire_signature> h) {
  sync::launch_acquire<lock_acquire>(std::move(core), std::move(a), std::move(h));
}

void start_acquire(std::shared_ptr<sync::client_core> core, acquire_args a,
                   asio::any_completion_handler<try_acquire_signature> h) {
  sync::launch_acquire<lock_acquire>(std::move(core), std::move(a), std::move(h));
}

asio::awaitable<void> undo_acquire(std::shared_ptr<sync::client_core> core, std::string name, std::string owner,
                                   std::int64_t count_before, std::chrono::milliseconds lease) {
  auto args = facts_of(lock_kind::reentrant).undo_args(*core, name, owner, count_before);
  co_await sync::undo_with(std::move(core), scripts::lock_calls, std::move(args), std::move(name), std::move(owner), lease);
}

lock_acquire::lock_acquire(std::shared_ptr<sync::client_core> core, acquire_args a, handler_type handler)
    : hold_acquire{channel_of(a.name), std::move(core), std::move(a), std::move(handler)} {}

std::optional<primitive> lock_acquire::counted_as() const { return facts_of(kind()).counted_as; }

sync::hold_kind const& lock_acquire::kind_of_hold() const { return hold_kind_of(kind()); }

script const& lock_acquire::attempt_script() const { return scripts::lock_calls; }

sync::message_policy lock_acquire::policy() const { return on_message; }

io::outgoing lock_acquire::attempt(bool retry, bool by_digest) {
  std::string const lease = std::to_string(this->lease().count());
  std::string const token_key = token_key_of(args().name);
  std::array<std::string_view, 2> const keys{args().name, token_key};
  bool const keep = core()->cfg().persistent_fencing_counter;
  std::string const before = count_argument(retry);
  if (before.empty()) {
    std::array<std::string_view, 3> const argv{keep ? "acquire+" : "acquire", args().owner, lease};
    return script_call(scripts::lock_calls, args().slot, keys, argv, by_digest);
  }
  std::array<std::string_view, 4> const argv{keep ? "retry-acquire+" : "retry-acquire", args().owner, lease, before};
  return script_call(scripts::lock_calls, args().slot, keys, argv, by_digest);
}

bool lock_acquire::may_grant(resp::value const& reply) const {
  return read_acquire_reply(reply).what != acquire_reply::outcome::busy;
}

lock_acquire::outcome lock_acquire::read(error_code ec, io::response& replies) {
  if (ec == error::ambiguous) return {outcome_kind::unknown};
  if (ec) return {outcome_kind::failed, ec};
  if (replies.size() != 1) return {outcome_kind::unreadable};
  auto const& reply = replies[0];
  if (reply.is_error()) return {outcome_kind::failed, server_error_code(reply.text())};
  auto const answer = read_acquire_reply(reply);
  switch (answer.what) {
    case acquire_reply::outcome::held:
      // Its lease, counted from the send, ran out before the reply came (the server stalled): a
      // hold past its deadline is never returned; confirming it renews the lease.
      if (too_late(sent())) return {outcome_kind::unknown};
      grant(answer.token, answer.count, sent());
      return {outcome_kind::granted};
    case acquire_reply::outcome::busy:
      return {outcome_kind::busy, {}, std::chrono::milliseconds{answer.pttl}};
    case acquire_reply::outcome::unexpected: break;
  }
  return {outcome_kind::unreadable};
}

void lock_acquire::undo(std::function<void()> then) {
  core()->spawn_cleanup(undo_acquire(core(), args().name, args().owner, count_before(), lease()), std::move(then));
}

}  // namespace redisync::detail::lock_protocol
