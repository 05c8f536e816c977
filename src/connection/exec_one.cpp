#include "connection/exec_one.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/deferred.hpp>

namespace redisync::detail {

namespace asio = boost::asio;
using boost::system::error_code;

asio::awaitable<std::tuple<error_code, resp::value>> exec_one(connection& conn, resp::request req) {
  auto [ec, replies] = co_await conn.exec(std::move(req), asio::as_tuple(asio::deferred));
  if (!ec && replies.size() != 1) ec = error::unexpected_reply;
  if (ec) co_return std::tuple{ec, resp::value{}};
  co_return std::tuple{check_replies(replies), std::move(replies.front())};
}

}  // namespace redisync::detail
