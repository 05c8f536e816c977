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
  if (!cfg.tls) return;
  tls_context_ = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
  auto& ctx = *tls_context_;
  // A file that is no PEM of the right kind fails every connect, named (config::problem() has
  // checked that the files can be read).
  error_code ec;
  auto setup = [&](char const* step) {
    if (ec && !setup_error_) {
      setup_error_ = ec;
      setup_step_ = step;
    }
  };
  if (cfg.tls_ca_file.empty()) {
    ctx.set_default_verify_paths(ec);
    setup("TLS setup: the system's CA certificates");
  } else {
    ctx.load_verify_file(cfg.tls_ca_file, ec);
    setup("TLS setup: tls_ca_file");
  }
  if (!cfg.tls_cert_file.empty()) {
    ctx.use_certificate_chain_file(cfg.tls_cert_file, ec);
    setup("TLS setup: tls_cert_file");
    ctx.use_private_key_file(cfg.tls_key_file, asio::ssl::context::pem, ec);  // also: the certificate's key?
    setup("TLS setup: tls_key_file");
  }
  ctx.set_verify_mode(cfg.tls_verify_peer ? asio::ssl::verify_peer : asio::ssl::verify_none, ec);
  setup("TLS setup");
}

asio::awaitable<error_code> stream::connect(config const& cfg) {
  close();
  tls_.reset();
  socket_.reset();
  if (setup_error_) {
    step_ = setup_step_;
    co_return setup_error_;
  }
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
