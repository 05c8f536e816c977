#pragma once

// A scripted RESP server on a loopback port for error injection: each command (an array of bulk
// strings) is answered with the raw bytes the script returns. Not a stand-in for Redis behaviour.

#include <redisync/resp/parser.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace redisync::test {

namespace asio = boost::asio;

class fake_redis {
 public:
  using script = std::function<std::string(std::vector<std::string> const&)>;

  fake_redis(asio::any_io_executor ex, script s)
      : acceptor_{ex, {asio::ip::make_address("127.0.0.1"), 0}},
        script_{std::make_shared<script>(std::move(s))} {
    asio::co_spawn(ex, accept_loop(), asio::detached);
  }

  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }
  void close() {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    for (auto& s : sockets_) {
      if (auto p = s.lock()) p->close(ignored);
    }
  }

  // A script's answer that closes the connection instead of replying; after other bytes, it closes
  // the connection once they are sent (a truncated reply).
  static std::string hang_up() { return std::string{"\0hang up", 8}; }

  // The usual HELLO reply, enough for the handshake.
  static std::string hello_reply() {
    return "%3\r\n$6\r\nserver\r\n$5\r\nredis\r\n$5\r\nproto\r\n:3\r\n$4\r\nrole\r\n$6\r\nmaster\r\n";
  }

 private:
  asio::awaitable<void> accept_loop() {
    for (;;) {
      auto [ec, socket] = co_await acceptor_.async_accept(asio::as_tuple(asio::use_awaitable));
      if (ec) co_return;
      auto shared = std::make_shared<asio::ip::tcp::socket>(std::move(socket));
      sockets_.push_back(shared);
      asio::co_spawn(acceptor_.get_executor(), serve(shared, script_), asio::detached);
    }
  }

  static asio::awaitable<void> serve(std::shared_ptr<asio::ip::tcp::socket> socket,
                                     std::shared_ptr<script> s) {
    resp::parser parser;
    std::string buffer;
    char chunk[4096];
    for (;;) {
      boost::system::error_code pec;
      buffer.erase(0, parser.feed(buffer, pec));
      if (pec) co_return;
      if (parser.has_value()) {
        std::vector<std::string> command;
        auto const message = parser.take_value();
        for (auto const& e : message.elements()) command.emplace_back(e.text());
        std::string reply = (*s)(command);
        bool const then_close = reply.ends_with(hang_up());
        if (then_close) reply.resize(reply.size() - hang_up().size());
        auto [wec, n] =
            co_await asio::async_write(*socket, asio::buffer(reply), asio::as_tuple(asio::use_awaitable));
        if (wec) co_return;
        if (then_close) {
          boost::system::error_code ignored;
          socket->close(ignored);
          co_return;
        }
        continue;
      }
      auto [ec, n] = co_await socket->async_read_some(asio::buffer(chunk),
                                                      asio::as_tuple(asio::use_awaitable));
      if (ec) co_return;
      buffer.append(chunk, n);
    }
  }

  asio::ip::tcp::acceptor acceptor_;
  std::shared_ptr<script> script_;
  std::vector<std::weak_ptr<asio::ip::tcp::socket>> sockets_;
};

}  // namespace redisync::test
