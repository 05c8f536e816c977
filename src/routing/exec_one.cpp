#include "routing/exec_one.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/deferred.hpp>

namespace redisync::detail::routing {

namespace asio = boost::asio;
using io::error_code;

asio::awaitable<std::tuple<error_code, io::response>> exec(router& r, slot_type slot, resp::request req) {
  constexpr auto tuple_token = asio::as_tuple(asio::deferred);
  auto send = [&r, slot, &req](auto handler) {
    r.exec(slot, io::outgoing::from(std::move(req)), {}, std::move(handler));
  };
  co_return co_await asio::async_initiate<decltype(tuple_token), void(error_code, io::response)>(send, tuple_token);
}

asio::awaitable<std::tuple<error_code, resp::value>> exec_one(router& r, slot_type slot, resp::request req) {
  auto [ec, replies] = co_await exec(r, slot, std::move(req));
  if (!ec && replies.size() != 1) ec = error::unexpected_reply;
  if (ec) co_return std::tuple{ec, resp::value{}};
  co_return std::tuple{io::check_replies(replies), std::move(replies.front())};
}

}  // namespace redisync::detail::routing
