#include "primitives/permits/protocol.hpp"

#include "routing/hash_slot.hpp"

#include <scripts.hpp>

#include <algorithm>
#include <atomic>

namespace redisync::detail::permits_protocol {

namespace {

class permits_renewal_kind final : public sync::renewal_kind {
 public:
  script const& renewal_script() const override { return scripts::permits_renew; }
  script_args renewal_args(std::span<std::shared_ptr<sync::hold_state>> holds,
                           std::chrono::milliseconds lease) const override {
    // A semaphore's permits side by side: its keys go once.
    std::ranges::stable_sort(holds, {}, [](auto const& h) -> std::string_view { return h->name; });
    script_args args;
    args.argv.reserve(holds.size() + 2);
    args.argv.push_back(std::to_string(lease.count()));
    for (std::size_t i = 0; i < holds.size();) {
      auto const& name = holds[i]->name;
      std::size_t end = i + 1;
      while (end < holds.size() && holds[end]->name == name) ++end;
      args.keys.push_back(leases_key_of(name));
      args.keys.push_back(holders_key_of(name));
      args.argv.push_back(std::to_string(end - i));
      for (; i < end; ++i) args.argv.push_back(holds[i]->owner);
    }
    return args;
  }
};

permits_renewal_kind const renewal_of_permits;

}  // namespace

std::string leases_key_of(std::string_view name) { return routing::key_beside("redisync_permits_leases:", name); }
std::string holders_key_of(std::string_view name) { return routing::key_beside("redisync_permits_holders:", name); }
std::string token_key_of(std::string_view name) { return routing::key_beside("redisync_permits_token:", name); }
std::string channel_of(std::string_view name) { return routing::key_beside("redisync_permits__channel:", name); }
std::string queue_key_of(std::string_view name) { return routing::key_beside("redisync_permits_queue:", name); }

std::string new_permit_id(std::string_view owner) {
  static std::atomic<std::uint64_t> next{1};
  return std::string{owner} + ":p" + std::to_string(next.fetch_add(1, std::memory_order_relaxed));
}

acquire_reply read_acquire_reply(resp::value const& reply) {
  if (reply.kind() != resp::type::array || reply.elements().size() != 2) return {};
  auto const& e = reply.elements();
  if (e[0].kind() != resp::type::integer) return {};
  std::int64_t token = 0;
  if (e[0].integer() == 1 && e[1].is_string() && e[1].as_integer(token) && token > 0) {
    return {true, true, static_cast<std::uint64_t>(token), 0};
  }
  if (e[0].integer() == 0 && e[1].kind() == resp::type::integer && e[1].integer() >= -1) {
    return {true, false, 0, e[1].integer()};
  }
  return {};
}

sync::renewal_kind const& renewal() { return renewal_of_permits; }

void on_fair_message(sync::waiter_queue& queue, std::string_view message) {
  if (auto const slash = message.find('/'); slash != std::string_view::npos) {
    return queue.wake_named(message.substr(slash + 1));
  }
  queue.wake_one();
}

}  // namespace redisync::detail::permits_protocol
