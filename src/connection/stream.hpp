#pragma once

// The byte stream under a connection: a TCP socket, optionally wrapped in TLS.

#include <redisync/config.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/strand.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <tuple>

namespace redisync::detail {

class stream {
 public:
  using executor_type = boost::asio::strand<boost::asio::any_io_executor>;

  stream(executor_type ex, config const& cfg);

  // Resolves, connects (trying each address) and, for TLS, performs the TLS handshake. Any socket
  // from an earlier connection is replaced.
  boost::asio::awaitable<boost::system::error_code> connect(config const& cfg);

  boost::asio::awaitable<std::tuple<boost::system::error_code, std::size_t>> read_some(
      boost::asio::mutable_buffer buffer);
  boost::asio::awaitable<std::tuple<boost::system::error_code, std::size_t>> write(
      boost::asio::const_buffer buffer);

  void close() noexcept;
  bool is_open() const noexcept { return socket_.has_value() && lowest().is_open(); }

 private:
  using tls_stream = boost::asio::ssl::stream<boost::asio::ip::tcp::socket>;
  boost::asio::ip::tcp::socket& lowest() { return tls_ ? tls_->next_layer() : *socket_; }
  boost::asio::ip::tcp::socket const& lowest() const {
    return tls_ ? tls_->next_layer() : *socket_;
  }

  executor_type ex_;
  std::unique_ptr<boost::asio::ssl::context> tls_context_;
  std::optional<boost::asio::ip::tcp::socket> socket_;
  std::optional<tls_stream> tls_;
};

}  // namespace redisync::detail
