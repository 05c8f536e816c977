#include "cli/hold_windows.hpp"

#include "cli/common.hpp"

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

}  // namespace

asio::awaitable<std::tuple<error_code, std::int64_t, std::int64_t, resp::value>> open_window(
    client& c, hold_window const& w, std::string const& counter) {
  auto const open_after = fmt::format("({}", monotonic_ns() / 1000);
  resp::request req;
  req.push("ZREMRANGEBYSCORE", side_key(w, w.reads), "-inf", open_after);  // windows that ended
  req.push("ZADD", side_key(w, w.reads), w.until_us, w.member);
  req.push("ZCOUNT", side_key(w, w.reads), open_after, "+inf");
  req.push("ZCOUNT", side_key(w, !w.reads), open_after, "+inf");
  req.push("GET", counter);
  auto [ec, replies] = co_await c.exec(std::move(req), asio::as_tuple(asio::use_awaitable));
  if (!ec && replies.size() != 5) ec = error::unexpected_reply;
  if (!ec) ec = check_replies(replies);
  std::int64_t mine = 0, other = 0;
  if (!ec) {
    replies[2].as_integer(mine);
    replies[3].as_integer(other);
  }
  co_return std::tuple{ec, mine, other, ec ? resp::value{} : std::move(replies[4])};
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
