#pragma once

// The byte stream under a connection: a TCP socket, optionally wrapped in TLS.

#include <redisync/config.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <tuple>

namespace redisync::detail::io {

class stream {
 public:
  using executor_type = boost::asio::any_io_executor;

  stream(executor_type ex, config const& cfg);

  // Resolves, connects (trying each address) and, for TLS, performs the TLS handshake. Any socket
  // from an earlier connection is replaced.
  boost::asio::awaitable<boost::system::error_code> connect(config const& cfg);
  // The step a connect is at, or ended at ("resolve", "connect", "TLS handshake", "TLS setup: ..."):
  // where it failed,
  // or what a connect timeout interrupted.
  char const* step() const noexcept { return step_; }

  // Reads what is there, waiting until something is. A plain async_read_some: after a read that
  // drained the socket, Asio's reactor skips the speculative read and waits at once, so a reply
  // costs one recv (an explicit readable-wait would add an epoll_ctl to every read).
  boost::asio::awaitable<std::tuple<boost::system::error_code, std::size_t>> read_some(
      boost::asio::mutable_buffer buffer);

  // Reads what is there now without waiting (plain TCP only). Sets `ec` to would_block when
  // nothing is there, also on TLS, whose records are read only through read_some.
  std::size_t try_read(boost::asio::mutable_buffer buffer, boost::system::error_code& ec);

  // Writes all of `buffer`; `handler(error_code, std::size_t)` runs on its associated executor.
  template <class Handler>
  void async_write(boost::asio::const_buffer buffer, Handler&& handler) {
    if (tls_) {
      boost::asio::async_write(*tls_, buffer, std::forward<Handler>(handler));
    } else {
      boost::asio::async_write(*socket_, buffer, std::forward<Handler>(handler));
    }
  }

  // Writes what the socket takes now without waiting (plain TCP only; 0 on TLS). Sets `ec` to
  // would_block when the socket takes nothing.
  std::size_t try_write(boost::asio::const_buffer buffer, boost::system::error_code& ec);

  void close() noexcept;

 private:
  using tls_stream = boost::asio::ssl::stream<boost::asio::ip::tcp::socket>;
  boost::asio::ip::tcp::socket& lowest() { return tls_ ? tls_->next_layer() : *socket_; }

  executor_type ex_;
  std::unique_ptr<boost::asio::ssl::context> tls_context_;
  std::optional<boost::asio::ip::tcp::socket> socket_;
  std::optional<tls_stream> tls_;
  char const* step_ = "resolve";
  boost::system::error_code setup_error_;  // the TLS context could not be made from the config
  char const* setup_step_ = "";
};

}  // namespace redisync::detail::io
