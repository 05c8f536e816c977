#pragma once

// A campaign: the reentrant lock's acquire on the election's lock, whose attempt is
// election_calls.lua's `campaign` (acquire.lua, and on a fresh grant the `elected` entry in the
// log). It takes no hand-off from a release of this client: only its own attempt records its term.

#include "primitives/lock_protocol/acquire.hpp"

#include <string>
#include <string_view>

namespace redisync::detail::election_protocol {

// Keys and channel of election `name`: the leader's lock, the log of changes, the observers'
// channel. All in the name's slot.
std::string lock_key_of(std::string_view name);
std::string log_key_of(std::string_view name);
std::string channel_of(std::string_view name);

class campaign_acquire final : public lock_protocol::lock_acquire {
 public:
  // `a.name` is the election's lock (lock_key_of), `a.owner` a fresh candidate.
  campaign_acquire(std::string election, std::string value, std::shared_ptr<sync::client_core> core,
                   lock_protocol::acquire_args a, handler_type handler);

 private:
  bool takes_handoffs() const override { return false; }
  std::optional<primitive> counted_as() const override { return primitive::election; }
  script const& attempt_script() const override;
  io::outgoing attempt(bool retry, bool by_digest) override;

  std::string election_;
  std::string value_;
};

}  // namespace redisync::detail::election_protocol
