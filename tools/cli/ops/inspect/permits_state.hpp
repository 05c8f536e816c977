#pragma once

// What Redis knows of leased permits (a hash with the field 'permits'), read in one round trip:
// the object that `inspect --json` prints and that `top` shows a row of.

#include "cli/common/common.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>

#include <string>

namespace redisync::cli {

// Whether the hash `name` is leased permits: it has the field 'permits', which no lock has.
boost::asio::awaitable<bool> is_leased_permits(client& c, std::string const& name);

// {name, node, type "permits", permits (in all), permits_free, holders [{permit, permits, token,
//  lease_left_ms}] (by the server's clock; an ended lease's permits count as free), fair_queue
//  (its waiters' number), subscribers}.
boost::asio::awaitable<boost::json::object> read_permits_state(client& c, std::string const& name);

}  // namespace redisync::cli
