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
  req.push("ZRANGEBYSCORE", side_key(w, w.reads), open_after, "+inf", "WITHSCORES");
  req.push("ZRANGEBYSCORE", side_key(w, !w.reads), open_after, "+inf", "WITHSCORES");
  req.push("GET", counter);
  auto [ec, replies] = co_await c.exec(std::move(req), asio::as_tuple(asio::use_awaitable));
  if (!ec && replies.size() != 5) ec = error::unexpected_reply;
  if (!ec) ec = check_replies(replies);
  // Counted as open at the reply, not at the request: a window that ended while the request was
  // on its way (or while this process was paused, before it sent it) was no longer open when Redis
  // counted, and counting it would make an overlap of holds that never were at once.
  auto const now_us = monotonic_ns() / 1000;
  // (RESP3 answers WITHSCORES with [member, score] pairs, the score a double.)
  auto const open_at_reply = [now_us](resp::value const& windows) {
    std::int64_t open = 0;
    for (auto const& pair : windows.elements()) {
      auto const e = pair.elements();
      if (e.size() == 2 && e[1].number() > static_cast<double>(now_us)) ++open;
    }
    return open;
  };
  std::int64_t mine = 0, other = 0;
  if (!ec) {
    mine = open_at_reply(replies[2]);
    other = open_at_reply(replies[3]);
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
