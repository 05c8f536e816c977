#pragma once

// The fair lock's side of Redis: Redisson's lock hash, fencing counter and channel (lock_protocol),
// and a queue of our own beside them, `redisync_fair_queue:{name}` (waiters by arrival, each as
// `client/owner`), whose waiters are judged alive per client (sync::client_liveness). A release
// calls the next waiter by that name on the lock's channel, where Redisson's unlock message '0'
// wakes fair waiters too. The script is fair_calls.lua beside this file.

#include "sync/client_core.hpp"

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace redisync::detail::fair_protocol {

std::string queue_key_of(std::string_view name);
// A waiter's name in the queue, and in the message that calls it.
std::string member_of(std::string_view client, std::string_view owner);

// The arguments that end each call of fair_calls.lua on `slot`: the client, the liveness keys'
// prefix, and for acquire and release the liveness and the poll cap.
void append_client(script_args& args, sync::client_core& core, routing::slot_type slot, bool with_periods);

// The arguments of fair_calls.lua's `release` of one level of `owner`'s hold: `retry` is
// lock_protocol::retry_argument's, `next_owner` a waiter of this client to hand the lock to if the
// server finds it at the head of the queue (or empty).
script_args release_args(sync::client_core& core, std::string const& name, std::string const& owner,
                         std::chrono::milliseconds lease, std::string retry,
                         std::string_view next_owner, std::optional<std::chrono::milliseconds> next_lease);

// Takes `owner` out of the queue of `name` (a waiter that gave up), calling the next head if the
// lock is free. Once: a place left behind by a lost call dies with its client's key, or its queue.
boost::asio::awaitable<void> leave_queue(std::shared_ptr<sync::client_core> core, std::string name, std::string owner);

}  // namespace redisync::detail::fair_protocol
