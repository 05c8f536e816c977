#include "cli/lab/stress/hold_windows.hpp"

#include "cli/common/common.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/core.h>

namespace redisync::cli {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

std::string side_key(hold_window const& w, bool reads) { return w.lock + (reads ? ":readers" : ":writers"); }

std::int64_t wall_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Opens a window and counts the open ones of both sides, at the moment Redis runs it: windows are
// on this machine's monotonic clock, whose reading there is the one at sending plus the time that
// Redis's clock says passed since (a process paused before it sent counts no window that ended
// meanwhile). Each count is a ZCOUNT, O(log n) however many holds are open; the side expires once
// its last window has ended.
// KEYS: this side, the other side, the counter. ARGV: member, its end (µs), monotonic and wall
// clock at sending (µs).
redisync::script const open_window_script{R"lua(
local t = redis.call('time')
local now = tonumber(ARGV[3]) + (tonumber(t[1]) * 1000000 + tonumber(t[2]) - tonumber(ARGV[4]))
local open_after = '(' .. string.format('%d', now)
redis.call('zremrangebyscore', KEYS[1], '-inf', open_after)
redis.call('zadd', KEYS[1], ARGV[2], ARGV[1])
local lasts_ms = math.max(math.floor((tonumber(ARGV[2]) - now) / 1000), 0) + 1000
if redis.call('pttl', KEYS[1]) < lasts_ms then redis.call('pexpire', KEYS[1], lasts_ms) end
return {redis.call('zcount', KEYS[1], open_after, '+inf'), redis.call('zcount', KEYS[2], open_after, '+inf'),
        redis.call('get', KEYS[3])}
)lua"};

}  // namespace

asio::awaitable<std::tuple<error_code, std::int64_t, std::int64_t, resp::value>> open_window(
    client& c, hold_window const& w, std::string const& counter) {
  std::vector<std::string> keys{side_key(w, w.reads), side_key(w, !w.reads), counter};
  std::vector<std::string> args{w.member, std::to_string(w.until_us), std::to_string(monotonic_ns() / 1000),
                                std::to_string(wall_us())};
  auto [ec, reply] = co_await c.eval(open_window_script, std::move(keys), std::move(args),
                                     asio::as_tuple(asio::use_awaitable));
  auto const e = reply.elements();
  if (!ec && (e.size() != 3 || e[0].kind() != resp::type::integer || e[1].kind() != resp::type::integer)) {
    ec = error::unexpected_reply;
  }
  if (ec) co_return std::tuple{ec, std::int64_t{0}, std::int64_t{0}, resp::value{}};
  co_return std::tuple{ec, e[0].integer(), e[1].integer(), e[2]};
}

asio::awaitable<error_code> close_window(client& c, hold_window const& w) {
  auto ex = co_await asio::this_coro::executor;
  while (true) {
    resp::request req;
    req.push("ZREM", side_key(w, w.reads), w.member);
    auto [ec, ignored] = co_await try_command(c, std::move(req));
    if (!ec || monotonic_ns() / 1000 >= w.until_us) co_return ec;
    asio::steady_timer pause{ex, std::chrono::milliseconds{20}};
    co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
  }
}

}  // namespace redisync::cli
