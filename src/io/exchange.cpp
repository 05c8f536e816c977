#include "io/exchange.hpp"

#include <redisync/resp/parser.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/deferred.hpp>
#include <fmt/core.h>

namespace redisync::detail::io {

namespace asio = boost::asio;

asio::awaitable<exchange_result> exchange(stream& s, std::string payload, std::size_t count) {
  constexpr auto tuple_token = asio::as_tuple(asio::deferred);
  exchange_result out;
  auto write = [&s, &payload](auto handler) { s.async_write(asio::buffer(payload), std::move(handler)); };
  auto [wec, written] = co_await asio::async_initiate<decltype(tuple_token), void(boost::system::error_code, std::size_t)>(
      write, tuple_token);
  if (wec) {
    out.failure = fmt::format("write: {}", wec.message());
    co_return out;
  }
  resp::parser parser;
  std::vector<char> buffer(4096);
  while (out.replies.size() < count) {
    auto [rec, n] = co_await s.read_some(asio::buffer(buffer));
    if (rec) {
      out.failure = fmt::format("read: {}", rec.message());
      co_return out;
    }
    std::string_view bytes{buffer.data(), n};
    while (!bytes.empty()) {
      boost::system::error_code pec;
      bytes.remove_prefix(parser.feed(bytes, pec));
      if (pec) {
        out.failure = "it does not speak RESP";
        out.not_resp = true;
        co_return out;
      }
      if (!parser.has_value()) break;
      out.replies.push_back(parser.take_value());
    }
  }
  co_return out;
}

}  // namespace redisync::detail::io
