#pragma once

// The fair lock's side of Redis: Redisson's lock hash and fencing counter (lock_protocol), and a
// queue of our own beside them, `redisync_fair_queue:{name}` (owners by arrival) and
// `redisync_fair_alive:{name}` (owners by the server time until which they count as alive). A
// release calls the next waiter by name on `redisync_fair__channel:{name}`. The scripts are
// fair_calls.lua and fair_heartbeat.lua beside this file.

#include "sync/client_core.hpp"

#include <boost/asio/awaitable.hpp>

#include <string>
#include <string_view>

namespace redisync::detail::fair_protocol {

std::string queue_key_of(std::string_view name);
std::string alive_key_of(std::string_view name);
std::string channel_of(std::string_view name);

// The watchdog's heartbeats of queued waiters (fair_heartbeat.lua).
sync::renewal_kind const& heartbeat();

// A message names the waiter whose turn it is.
void on_message(sync::waiter_queue& queue, std::string_view message);

// Takes `owner` out of the queue of `name` (a waiter that gave up), calling the next head if the
// lock is free. Once: a place left behind by a lost call dies with its heartbeats.
boost::asio::awaitable<void> leave_queue(std::shared_ptr<sync::client_core> core, std::string name, std::string owner);

}  // namespace redisync::detail::fair_protocol
