#include "io/stream.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/write.hpp>

#include <openssl/ssl.h>

namespace redisync::detail::io {

namespace asio = boost::asio;
using boost::system::error_code;
constexpr auto tuple_token = asio::as_tuple(asio::deferred);

stream::stream(executor_type ex, config const& cfg) : ex_{std::move(ex)} {
  if (cfg.tls) {
    tls_context_ = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
    if (cfg.tls_ca_file.empty()) {
      tls_context_->set_default_verify_paths();
    } else {
      tls_context_->load_verify_file(cfg.tls_ca_file);
    }
    tls_context_->set_verify_mode(cfg.tls_verify_peer ? asio::ssl::verify_peer
                                                      : asio::ssl::verify_none);
  }
}

asio::awaitable<error_code> stream::connect(config const& cfg) {
  close();
  tls_.reset();
  socket_.reset();
  step_ = "resolve";
  asio::ip::tcp::resolver resolver{ex_};
  auto [rec, endpoints] =
      co_await resolver.async_resolve(cfg.host, std::to_string(cfg.port), tuple_token);
  if (rec) co_return rec;

  if (tls_context_) {
    tls_.emplace(ex_, *tls_context_);
  } else {
    socket_.emplace(ex_);
  }
  step_ = "connect";
  auto [cec, endpoint] = co_await asio::async_connect(lowest(), endpoints, tuple_token);
  if (cec) co_return cec;
  lowest().set_option(asio::ip::tcp::no_delay{true});
  if (!tls_) {
    lowest().non_blocking(true);  // for try_read and try_write
    co_return error_code{};
  }

  if (cfg.tls_verify_peer) tls_->set_verify_callback(asio::ssl::host_name_verification{cfg.host});
  SSL_set_tlsext_host_name(tls_->native_handle(), cfg.host.c_str());
  step_ = "TLS handshake";
  auto [hec] = co_await tls_->async_handshake(asio::ssl::stream_base::client, tuple_token);
  co_return hec;
}

asio::awaitable<std::tuple<error_code, std::size_t>> stream::read_some(asio::mutable_buffer buffer) {
  if (tls_) co_return co_await tls_->async_read_some(buffer, tuple_token);
  co_return co_await socket_->async_read_some(buffer, tuple_token);
}

std::size_t stream::try_read(asio::mutable_buffer buffer, error_code& ec) {
  if (tls_ || !socket_) {
    ec = asio::error::would_block;
    return 0;
  }
  return socket_->read_some(buffer, ec);
}

std::size_t stream::try_write(asio::const_buffer buffer, error_code& ec) {
  if (tls_ || !socket_) {
    ec = asio::error::would_block;
    return 0;
  }
  return socket_->write_some(buffer, ec);
}

void stream::close() noexcept {
  error_code ignored;
  if (tls_) tls_->next_layer().close(ignored);
  if (socket_) socket_->close(ignored);
}

}  // namespace redisync::detail::io
