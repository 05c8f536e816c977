#include "primitives/election/campaign.hpp"

#include "primitives/lock_protocol/protocol.hpp"
#include "routing/hash_slot.hpp"

#include <scripts.hpp>

namespace redisync::detail::election_protocol {

std::string lock_key_of(std::string_view name) { return routing::key_beside("redisync_election:", name); }
std::string log_key_of(std::string_view name) { return routing::key_beside("redisync_election_log:", name); }
std::string channel_of(std::string_view name) {
  return routing::key_beside("redisync_election__channel:", name);
}

campaign_acquire::campaign_acquire(std::string election, std::string value, std::shared_ptr<sync::client_core> core,
                                   lock_protocol::acquire_args a, handler_type handler)
    : lock_acquire{std::move(core), std::move(a), std::move(handler)},
      election_{std::move(election)},
      value_{std::move(value)} {}

script const& campaign_acquire::attempt_script() const { return scripts::election_calls; }

io::outgoing campaign_acquire::attempt(bool retry, bool by_digest) {
  auto const& lock = args().name;
  script_args call{{lock, lock_protocol::token_key_of(lock), log_key_of(election_)},
                   {"campaign", args().owner, std::to_string(lease().count()),
                    count_argument(retry),
                    core()->cfg().persistent_fencing_counter ? "1" : "", value_, channel_of(election_)}};
  return script_call(scripts::election_calls, args().slot, call, by_digest);
}

}  // namespace redisync::detail::election_protocol
