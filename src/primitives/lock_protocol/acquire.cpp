#include "primitives/lock_protocol/acquire.hpp"

#include "primitives/lock_protocol/kinds.hpp"
#include "primitives/lock_protocol/release.hpp"
#include "sync/undo.hpp"

namespace redisync::detail::lock_protocol {

namespace asio = boost::asio;
using io::error_code;

asio::awaitable<void> undo_acquire(std::shared_ptr<sync::client_core> core, lock_kind kind, std::string name,
                                   std::string owner, std::int64_t count_before, std::chrono::milliseconds lease) {
  auto const& facts = facts_of(kind);
  auto args = facts.undo_args(*core, name, owner, count_before);
  co_await sync::undo_with(std::move(core), *facts.release_script, std::move(args), std::move(name), std::move(owner),
                           lease);
}

lock_acquire::lock_acquire(std::shared_ptr<sync::client_core> core, acquire_args a, handler_type handler)
    : hold_acquire{channel_of(a.name), std::move(core), std::move(a), std::move(handler)} {}

std::optional<primitive> lock_acquire::counted_as() const { return facts_of(kind()).counted_as; }

sync::hold_kind const& lock_acquire::kind_of_hold() const { return hold_kind_of(kind()); }

sync::message_policy lock_acquire::policy() const { return on_message; }

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
  core()->spawn_cleanup(undo_acquire(core(), kind(), args().name, args().owner, count_before(), lease()), std::move(then));
}

}  // namespace redisync::detail::lock_protocol
