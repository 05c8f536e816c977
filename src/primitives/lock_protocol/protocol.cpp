#include "primitives/lock_protocol/protocol.hpp"

#include "routing/hash_slot.hpp"

#include <limits>

#include <scripts.hpp>

namespace redisync::detail::lock_protocol {


namespace {

class lock_renewal final : public sync::renewal_kind {
 public:
  script const& renewal_script() const override { return scripts::lock_renew; }
  script_args renewal_args(std::span<std::shared_ptr<sync::hold_state>> holds,
                           std::chrono::milliseconds lease) const override {
    script_args args;
    args.keys.reserve(holds.size());
    args.argv.reserve(holds.size() + 1);
    args.argv.push_back(std::to_string(lease.count()));
    for (auto const& hold : holds) {
      args.keys.push_back(hold->name);
      args.argv.push_back(hold->owner);
    }
    return args;
  }
};

lock_renewal const renewal_of_locks;

}  // namespace

std::string channel_of(std::string_view name) { return routing::key_beside("redisson_lock__channel:", name); }

std::string token_key_of(std::string_view name) { return routing::key_beside("redisson_lock_token:", name); }

sync::renewal_kind const& renewal() { return renewal_of_locks; }


void on_message(sync::waiter_queue& queue, std::string_view message) {
  if (message == "0") return queue.wake_one();
  // A fair lock's call of its next waiter, `client/owner` (fair_queue.lua).
  if (auto const slash = message.find('/'); slash != std::string_view::npos) queue.wake_named(message.substr(slash + 1));
}

acquire_reply read_acquire_reply(resp::value const& reply) {
  using outcome = acquire_reply::outcome;
  // Tokens travel as decimal strings (see next_token.lua); counts and PTTLs as integers.
  std::int64_t token = 0;
  if (reply.is_string()) {
    if (!reply.as_integer(token) || token <= 0) return {};
    return {outcome::held, static_cast<std::uint64_t>(token), 1};
  }
  if (reply.kind() != resp::type::array) return {};
  auto const e = reply.elements();
  if (e.size() == 1 && e[0].kind() == resp::type::integer) return {outcome::busy, 0, 0, e[0].integer()};
  if (e.size() == 2 && e[0].is_string() && e[0].as_integer(token) && token >= 0 &&
      e[1].kind() == resp::type::integer && e[1].integer() >= 1 && e[1].integer() <= max_hold_count) {
    return {outcome::held, static_cast<std::uint64_t>(token), e[1].integer()};
  }
  return {};
}

std::string retry_argument(std::optional<std::int64_t> count_before, std::optional<std::uint64_t> made_for) {
  if (!count_before) return {};
  if (!made_for) return std::to_string(*count_before);
  return std::to_string(*count_before) + ':' + std::to_string(*made_for);
}

release_outcome parse_release_reply(resp::value const& reply, std::optional<std::int64_t> count_before_lost_attempt) {
  release_outcome out;
  std::int64_t token = 0;
  if (reply.kind() == resp::type::array && reply.elements().size() == 2) {
    auto const& e = reply.elements();
    if (e[0].kind() != resp::type::integer || e[0].integer() != 0) return out;
    if (e[1].is_error()) {
      // Deleted, but the unlock message was refused.
      out.refused_publish = std::string{e[1].text()};
      out.remaining = 0;
    } else if (e[1].is_string() && e[1].as_integer(token) && token >= 0) {
      // A hand-off: {0, token}, the token a decimal string like every token (next_token.lua).
      out.handoff_token = static_cast<std::uint64_t>(token);
      out.remaining = 0;
    }
  } else if (reply.kind() == resp::type::integer && reply.integer() >= -2 &&
             reply.integer() < std::numeric_limits<std::int64_t>::max()) {
    // Levels left past max_hold_count are a count tampered with: what Redis holds all the same.
    // (One below the largest: a count that the next acquire names + 1.)
    out.remaining = reply.integer();
    if (out.remaining == -2 && count_before_lost_attempt) {
      out.remaining = *count_before_lost_attempt - 1;  // the lost attempt went through
    }
  }
  return out;
}

}  // namespace redisync::detail::lock_protocol
