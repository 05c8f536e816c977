#pragma once

// The fair lock's side of Redis: Redisson's lock hash and fencing counter (lock_protocol), and a
// queue of our own beside them, `redisync_fair_queue:{name}` (owners by arrival) and
// `redisync_fair_alive:{name}` (owners by the server time until which they count as alive). A
// release calls the next waiter by name on `redisync_fair__channel:{name}`. The scripts are
// fair_calls.lua and fair_heartbeat.lua beside this file.

#include "sync/client_core.hpp"

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace redisync::detail::fair_protocol {

std::string queue_key_of(std::string_view name);
std::string alive_key_of(std::string_view name);
std::string channel_of(std::string_view name);

// The arguments of fair_calls.lua's `release` of one level of `owner`'s hold: `retry_of` is the
// hold count before an attempt whose outcome was lost (or empty), `next_owner` a waiter of this
// client to hand the lock to if the server finds it at the head of the queue (or empty).
script_args release_args(std::string const& name, std::string const& owner, std::chrono::milliseconds lease,
                         std::optional<std::int64_t> retry_of, std::string_view next_owner,
                         std::optional<std::chrono::milliseconds> next_lease, bool keep);

// The watchdog's heartbeats of queued waiters (fair_heartbeat.lua).
sync::renewal_kind const& heartbeat();

// A message names the waiter whose turn it is.
void on_message(sync::waiter_queue& queue, std::string_view message);

// Takes `owner` out of the queue of `name` (a waiter that gave up), calling the next head if the
// lock is free. Once: a place left behind by a lost call dies with its heartbeats.
boost::asio::awaitable<void> leave_queue(std::shared_ptr<sync::client_core> core, std::string name, std::string owner);

}  // namespace redisync::detail::fair_protocol
