#pragma once

// A plain HTTP/1.0 GET on loopback with a bound, for tests that read a server's HTTP API (a
// Prometheus server, an exporter's /metrics): the body, or empty if the server did not answer
// 200 within the limit.

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include <cctype>
#include <chrono>
#include <cstdint>
#include <string>

namespace redisync::test {

inline std::string http_get(std::uint16_t port, std::string const& target,
                            std::chrono::milliseconds limit = std::chrono::seconds{5}) {
  namespace asio = boost::asio;
  using asio::ip::tcp;
  asio::io_context ctx;
  tcp::socket socket{ctx};
  std::string const request = "GET " + target + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  std::string response;
  bool ok = false;
  socket.async_connect({asio::ip::make_address("127.0.0.1"), port}, [&](boost::system::error_code ec) {
    if (ec) return;
    asio::async_write(socket, asio::buffer(request), [&](boost::system::error_code ec, std::size_t) {
      if (ec) return;
      asio::async_read(socket, asio::dynamic_buffer(response), [&](boost::system::error_code ec, std::size_t) {
        ok = ec == asio::error::eof;  // HTTP/1.0: the body ends with the connection
      });
    });
  });
  ctx.run_for(limit);
  if (!ok || !response.starts_with("HTTP/1.") || response.find(" 200 ") == std::string::npos) return {};
  auto const body = response.find("\r\n\r\n");
  return body == std::string::npos ? std::string{} : response.substr(body + 4);
}

// `text` with the characters a URL's query may not hold escaped.
inline std::string url_escaped(std::string const& text) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '_' || c == '-' || c == '.') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

}  // namespace redisync::test
