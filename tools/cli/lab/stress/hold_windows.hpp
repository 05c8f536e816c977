#pragma once

// The holds of a read-write lock in use, as validity windows that every process of `redisync
// stress` sees: a sorted set per side (`<lock>:readers`, `<lock>:writers`) of members scored by
// the hold's deadline (valid_until on this machine's monotonic clock, in µs: the processes share
// the machine). A hold adds itself and counts the others whose window is still open; of two holds
// that overlap, the one that adds itself last sees the other (Redis runs commands in one order).
// A hold that never takes itself out (its process was killed, a reply was lost) stops counting at
// its deadline, as its window ends there: no fault leaves a tally off. A hold kept past its first
// lease by the watchdog counts until that first deadline. Counting costs O(log n) in the open
// holds, and a side's key expires a second after its last window ends.

#include <redisync/client.hpp>

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <string>
#include <tuple>

namespace redisync::cli {

struct hold_window {
  std::string lock;
  bool reads = false;  // which side the hold is on
  std::string member;  // <pid>:<owner>:<iteration>
  std::int64_t until_us = 0;
};

// Opens `w`; returns the windows on its side (itself included while it is open) and on the other
// side that are open when Redis runs the call, and the value of `counter`, read in the same call
// (one script: the three keys must share a slot on a cluster).
boost::asio::awaitable<std::tuple<boost::system::error_code, std::int64_t, std::int64_t, resp::value>> open_window(
    client& c, hold_window const& w, std::string const& counter);

// Takes `w` out before the release, trying again while it is open: a window left behind would
// still count for the next hold. Also after an open_window that failed: it may have run.
boost::asio::awaitable<boost::system::error_code> close_window(client& c, hold_window const& w);

}  // namespace redisync::cli
