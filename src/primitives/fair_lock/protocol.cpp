#include "primitives/fair_lock/protocol.hpp"

#include "primitives/lock_protocol/protocol.hpp"
#include "routing/hash_slot.hpp"

#include <scripts.hpp>

namespace redisync::detail::fair_protocol {

std::string queue_key_of(std::string_view name) { return routing::key_beside("redisync_fair_queue:", name); }

std::string member_of(std::string_view client, std::string_view owner) {
  std::string member;
  member.reserve(client.size() + 1 + owner.size());
  member.append(client).append(1, '/').append(owner);
  return member;
}

void append_client(script_args& args, sync::client_core& core, routing::slot_type slot, bool with_periods) {
  args.argv.push_back(core.id());
  args.argv.push_back(core.liveness().alive_prefix(slot));
  if (!with_periods) return;
  args.argv.push_back(std::to_string(core.liveness().liveness().count()));
  args.argv.push_back(std::to_string(core.cfg().wait_poll_cap.count()));
}

script_args release_args(sync::client_core& core, std::string const& name, std::string const& owner,
                         std::chrono::milliseconds lease, std::string retry,
                         std::string_view next_owner, std::optional<std::chrono::milliseconds> next_lease) {
  script_args args{{name, queue_key_of(name), lock_protocol::token_key_of(name)},
                   {"release", owner, std::to_string(lease.count()), lock_protocol::channel_of(name),
                    std::move(retry), std::string{next_owner},
                    next_lease ? std::to_string(next_lease->count()) : "",
                    core.cfg().persistent_fencing_counter ? "1" : ""}};
  append_client(args, core, core.router().slot_of(name), true);
  return args;
}

boost::asio::awaitable<void> leave_queue(std::shared_ptr<sync::client_core> core, std::string name, std::string owner) {
  auto const slot = core->router().slot_of(name);
  script_args args{{name, queue_key_of(name)}, {"leave", std::move(owner), lock_protocol::channel_of(name)}};
  append_client(args, *core, slot, false);
  co_await run_script(core->scripts(), scripts::fair_calls, slot, args);
}

}  // namespace redisync::detail::fair_protocol
