#pragma once

// One look at members of a multi-lock that share a slot (multi_calls.lua): all of them granted, as
// guards, or the first that is busy, or an error with nothing taken. An outcome lost with a
// connection is asked again (the hold counts from before make the retry count once) while the
// caller still wants it; past that, whatever it may have granted is undone.

#include <redisync/held.hpp>
#include <redisync/lock_kind.hpp>

#include "sync/client_core.hpp"

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace redisync::detail::multi_protocol {

struct member {
  std::string name;
  std::string field;  // the owner's field in the lock hash (`<owner>:write` for a write)
  lock_kind kind = lock_kind::reentrant;
  routing::slot_type slot = 0;
};

struct take_outcome {
  io::error_code ec{};
  std::optional<std::size_t> busy{};  // which of the members asked for
  std::vector<held> guards{};          // one per member asked for, when granted
};

// `lease`: nothing for the watchdog's. `give_up`: whether the caller no longer wants the outcome
// (cancelled, or past its deadline): then an unknown outcome is undone instead of asked again.
boost::asio::awaitable<take_outcome> take(std::shared_ptr<sync::client_core> core,
                                          std::vector<member const*> members,
                                          std::optional<std::chrono::milliseconds> lease,
                                          std::function<bool()> give_up);

}  // namespace redisync::detail::multi_protocol
