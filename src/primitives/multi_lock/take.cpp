#include "primitives/multi_lock/take.hpp"

#include "primitives/lock_protocol/acquire.hpp"
#include "primitives/lock_protocol/kinds.hpp"
#include "primitives/lock_protocol/protocol.hpp"
#include "primitives/lock_protocol/release.hpp"
#include "script/runner.hpp"
#include "sync/grant.hpp"
#include "sync/lease_registry.hpp"
#include "sync/undo.hpp"

#include <scripts.hpp>

namespace redisync::detail::multi_protocol {

namespace asio = boost::asio;
using io::error_code;

namespace {

// What the owner holds of each member before the call: the hold it nests in, if any.
struct before {
  std::shared_ptr<sync::hold_state> hold;
  std::int64_t count = 0;
  std::chrono::milliseconds lease{};
};

script_args call_args(sync::client_core& core, std::vector<member const*> const& members,
                      std::vector<before> const& was, bool retry) {
  script_args args;
  auto const slot = members.front()->slot;
  args.argv = {core.cfg().persistent_fencing_counter ? "1" : "", core.id(), core.liveness().alive_prefix(slot)};
  for (std::size_t i = 0; i < members.size(); ++i) {
    auto const& m = *members[i];
    auto const& facts = lock_protocol::facts_of(m.kind);
    args.keys.insert(args.keys.end(), {m.name, lock_protocol::token_key_of(m.name), facts.multi_key_of(m.name)});
    args.argv.insert(args.argv.end(), {std::string{facts.multi_operation}, m.field,
                                       std::to_string(was[i].lease.count()), sync::count_argument(retry, was[i].count)});
  }
  return args;
}

// Releases the level a call may have added to member `m` (the hold count says whether it did).
asio::awaitable<void> undo_member(std::shared_ptr<sync::client_core> core, member const& m, before const& was) {
  auto const& facts = lock_protocol::facts_of(m.kind);
  co_await sync::undo_with(core, *facts.release_script, facts.undo_args(*core, m.name, m.field, was.count),
                           m.name, m.field, was.lease);
}

asio::awaitable<void> undo_all(std::shared_ptr<sync::client_core> core, std::vector<member> members,
                               std::vector<before> was) {
  for (std::size_t i = 0; i < members.size(); ++i) co_await undo_member(core, members[i], was[i]);
}

void spawn_undo(sync::client_core& core, std::vector<member const*> const& members, std::vector<before> const& was) {
  std::vector<member> copies;
  for (auto const* m : members) copies.push_back(*m);
  core.spawn_cleanup(undo_all(core.shared_from_this(), std::move(copies), was));
}

}  // namespace

asio::awaitable<take_outcome> take(std::shared_ptr<sync::client_core> core, std::vector<member const*> members,
                                   std::optional<std::chrono::milliseconds> lease, std::function<bool()> give_up) {
  std::vector<before> was;
  for (auto const* m : members) {
    auto hold = core->find_hold(sync::hold_key(m->field, m->name));
    // A nested acquire keeps the lease of the hold it nests in.
    auto const member_lease = hold ? hold->lease : lease.value_or(core->cfg().watchdog_lease);
    was.push_back({hold, hold ? hold->count : 0, member_lease});
  }
  auto const slot = members.front()->slot;
  bool retry = false;
  for (;;) {
    auto const sent = core->now();
    auto [ec, reply] = co_await run_script(core->scripts(), scripts::multi_calls, slot,
                                           call_args(*core, members, was, retry));
    if (ec == error::ambiguous) {
      if (give_up() || core->stopped()) {
        spawn_undo(*core, members, was);
        co_return take_outcome{ec};
      }
      retry = true;
      continue;
    }
    if (ec) co_return take_outcome{ec};
    std::int64_t busy = 0;
    if (reply.as_integer(busy)) {
      if (busy < 1 || static_cast<std::size_t>(busy) > members.size()) co_return take_outcome{error::unexpected_reply};
      co_return take_outcome{{}, static_cast<std::size_t>(busy - 1)};
    }
    auto const replies = reply.elements();
    std::vector<lock_protocol::acquire_reply> grants;
    for (auto const& r : replies) grants.push_back(lock_protocol::read_acquire_reply(r));
    bool const readable = reply.kind() == resp::type::array && grants.size() == members.size() &&
                          std::all_of(grants.begin(), grants.end(), [](auto const& g) {
                            return g.what == lock_protocol::acquire_reply::outcome::held;
                          });
    if (!readable) {
      spawn_undo(*core, members, was);
      co_return take_outcome{error::unexpected_reply};
    }
    // Granted after the shortest lease had run out (the server stalled): a retry confirms the
    // grants and renews their leases, unless the caller gave up meanwhile.
    auto const shortest = std::min_element(was.begin(), was.end(), [](auto const& a, auto const& b) {
                            return a.lease < b.lease;
                          })->lease;
    if (sync::validity_deadline(sent, shortest) <= core->now()) {
      if (give_up() || core->stopped()) {
        spawn_undo(*core, members, was);
        co_return take_outcome{error::timeout};
      }
      retry = true;
      continue;
    }
    take_outcome out;
    for (std::size_t i = 0; i < members.size(); ++i) {
      auto const& m = *members[i];
      auto hold = was[i].hold;
      if (!hold) {
        auto const& facts = lock_protocol::facts_of(m.kind);
        hold = sync::new_hold(m.name, m.field, facts.channel_of(m.name), m.slot, lock_protocol::renewal(),
                                          lock_protocol::hold_kind_of(m.kind), was[i].lease, !lease.has_value());
        hold->counted_as = facts.counted_as;
      }
      sync::grant_hold(*core, hold, grants[i].token, grants[i].count, sent);
      out.guards.push_back(sync::guard_for(core, hold));
    }
    co_return out;
  }
}

}  // namespace redisync::detail::multi_protocol
