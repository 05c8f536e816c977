#pragma once

// SCAN over a whole deployment. A cluster client sends a keyless command such as SCAN to one node
// only, so on a cluster every master is scanned through a connection of its own.

#include "cli/common/common.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace redisync::cli {

// SCAN's MATCH pattern and TYPE, and how many keys to take at most over every master.
struct key_scan {
  std::string match;
  std::string type;
  std::int64_t max_keys = 0;
};

// The keys `scan` finds, at most its max_keys: on a cluster, those of every master that serves
// slots (CLUSTER SHARDS through `c`), each master walked by a short-lived client of its own; on one
// server or a Sentinel's master, through `c`. Throws a runtime_error naming the master that could
// not be scanned: a partial answer would look like a whole one.
boost::asio::awaitable<std::vector<std::string>> scan_keys(client& c, key_scan const& scan);

}  // namespace redisync::cli
