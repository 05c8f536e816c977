#pragma once

// What Redis knows of one lock (reentrant, fair or read-write), read in a few round trips: the
// object that `inspect --json` prints and that `top` shows a row of.

#include "cli/common/common.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>

#include <string>

namespace redisync::cli {

// {name, node, type, holders {owner: count}, pttl_ms, fencing_token, subscribers, fair_queue [..],
//  not_a_lock (a hash with a field no lock has), read_write {mode, readers, writer,
//  waiting_writers, subscribers} (a read-write lock's, or waiting writers)}. Throws
// system_error for a failed command, naming its cause.
boost::asio::awaitable<boost::json::object> read_lock_state(client& c, std::string const& name);

}  // namespace redisync::cli
