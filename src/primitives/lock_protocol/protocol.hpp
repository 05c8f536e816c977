#pragma once

// The reentrant lock's side of Redis, in Redisson's layout: the lock hash maps an owner to its hold
// count and its PEXPIRE is the lease; `0` on `redisson_lock__channel:{name}` announces a release;
// fencing tokens come from `redisson_lock_token:{name}`. The scripts are the .lua files beside this
// one.

#include "sync/client_core.hpp"

#include <redisync/lock.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace redisync::detail::lock_protocol {

// Key names (Redisson's), beside the lock in its slot (routing::key_beside).
std::string channel_of(std::string_view name);
std::string token_key_of(std::string_view name);

// No owner nests a lock deeper than this (hold_depth.lua refuses it); a hold count beyond it in
// an acquire's reply is unreadable.
inline constexpr std::int64_t max_hold_count = max_hold_depth;

// What an acquire script call answered (acquire.lua): a hold with its token and count, the PTTL of
// another owner's hold, or something no version of the script returns.
struct acquire_reply {
  enum class outcome { held, busy, unexpected };
  outcome what = outcome::unexpected;
  std::uint64_t token = 0;
  std::int64_t count = 0;
  std::int64_t pttl = 0;
};
acquire_reply read_acquire_reply(resp::value const& reply);

// What a release script answered: the hold levels left (-1: not held; 0 also when the lock was
// handed over, with the token it went with, or when its unlock message was refused).
struct release_outcome {
  std::int64_t remaining = -3;  // -3: an unexpected reply
  std::optional<std::uint64_t> handoff_token;
  std::optional<std::string> refused_publish;  // the server's words
};
release_outcome parse_release_reply(resp::value const& reply, std::optional<std::int64_t> count_before_lost_attempt);

// The retry argument of a release call: '' for a first call, else the hold count before an attempt
// whose outcome was lost; a release made again after a change of master also names the token of
// the hold it ends, `<count>:<token>`, so that it never frees a newer one (release_again.lua).
std::string retry_argument(std::optional<std::int64_t> count_before, std::optional<std::uint64_t> made_for = {});

// The watchdog's renewal of lock holds (lock_renew.lua).
sync::renewal_kind const& renewal();

// Messages of the lock channel: `0` (a release) lets this client's first waiter try; a fair
// lock's call of a waiter by name wakes that waiter (see waiter_queue::wake_named).
void on_message(sync::waiter_queue& queue, std::string_view message);

}  // namespace redisync::detail::lock_protocol
