#include "primitives/fair_lock/protocol.hpp"

#include "primitives/lock/protocol.hpp"

#include <scripts.hpp>

namespace redisync::detail::fair_protocol {

namespace {

class fair_heartbeat final : public sync::renewal_kind {
 public:
  script const& renewal_script() const override { return scripts::fair_heartbeat; }
  script_args renewal_args(std::span<std::shared_ptr<sync::hold_state> const> places,
                           std::chrono::milliseconds liveness) const override {
    script_args args;
    args.keys.reserve(3 * places.size());
    args.argv.reserve(places.size() + 1);
    args.argv.push_back(std::to_string(liveness.count()));
    for (auto const& place : places) {
      args.keys.push_back(place->name);
      args.keys.push_back(queue_key_of(place->name));
      args.keys.push_back(alive_key_of(place->name));
      args.argv.push_back(place->owner);
    }
    return args;
  }
};

fair_heartbeat const heartbeat_of_waiters;

}  // namespace

std::string queue_key_of(std::string_view name) { return lock_protocol::prefixed("redisync_fair_queue:", name); }

std::string alive_key_of(std::string_view name) { return lock_protocol::prefixed("redisync_fair_alive:", name); }

std::string channel_of(std::string_view name) { return lock_protocol::prefixed("redisync_fair__channel:", name); }

script_args release_args(std::string const& name, std::string const& owner, std::chrono::milliseconds lease,
                         std::optional<std::int64_t> retry_of, std::string_view next_owner,
                         std::optional<std::chrono::milliseconds> next_lease, bool keep) {
  return {{name, queue_key_of(name), alive_key_of(name), lock_protocol::token_key_of(name)},
          {"release", owner, std::to_string(lease.count()), lock_protocol::channel_of(name), channel_of(name),
           retry_of ? std::to_string(*retry_of) : "", std::string{next_owner},
           next_lease ? std::to_string(next_lease->count()) : "", keep ? "1" : ""}};
}

sync::renewal_kind const& heartbeat() { return heartbeat_of_waiters; }

void on_message(sync::waiter_queue& queue, std::string_view message) { queue.wake_named(message); }

boost::asio::awaitable<void> leave_queue(std::shared_ptr<sync::client_core> core, std::string name, std::string owner) {
  script_args args{{name, queue_key_of(name), alive_key_of(name)}, {"leave", std::move(owner), channel_of(name)}};
  co_await run_script(core->scripts(), scripts::fair_calls, core->router().slot_of(name), args);
}

}  // namespace redisync::detail::fair_protocol
