#pragma once

// redisync inspect's parts: locks (inspect.cpp), semaphores (inspect_permits.cpp), latches
// (inspect_latch.cpp) and elections (inspect_election.cpp).

#include "cli/common/common.hpp"

#include <boost/asio/awaitable.hpp>

#include <string>
#include <string_view>

namespace redisync::cli {

// PUBSUB's count of a channel's subscribers: a cluster's channels are sharded (SHARDNUMSUB).
std::string_view numsub_command(client const& c);
// The count in a reply to PUBSUB NUMSUB or SHARDNUMSUB of one channel.
std::int64_t subscribers_in(resp::value const& numsub);

// Prints what Redis knows of the semaphore `name` whose key has `type`; false if it is none (no
// string, no hash of leased permits), and nothing was printed.
boost::asio::awaitable<bool> inspect_semaphore(client& c, std::string const& name, std::string_view type, bool as_json);

// Prints the count-down latch `name`: its count (a missing key is an open latch) and who listens.
// Its key is a string like a Redisson semaphore's, so only the caller can say which it is.
boost::asio::awaitable<void> inspect_latch(client& c, std::string const& name, bool as_json);

// Prints the election `name`: its leader, candidates, observers and last changes.
boost::asio::awaitable<void> inspect_election(client& c, std::string const& name, bool as_json);

}  // namespace redisync::cli
