// rediss:// through Asio SSL against a redis-server with a TLS port, a private CA, and client
// certificates asked for or not.

#include "io/connection.hpp"

#include <redisync/redisync.hpp>

#include "support/lock_fixture.hpp"

#include "testbed/redis_server.hpp"
#include "support/async_test.hpp"
#include "support/tls_redis.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>
#include <fmt/core.h>

#include <cstdlib>

namespace asio = boost::asio;
using boost::system::error_code;
using namespace std::chrono_literals;

using redisync::test::tls_redis;

BOOST_AUTO_TEST_SUITE(tls)

BOOST_AUTO_TEST_CASE(rediss_url_connects_over_tls_and_verifies_the_server) {
  tls_redis redis;
  redisync::test::run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    auto cfg = redisync::config::from_url(fmt::format("rediss://127.0.0.1:{}", redis.tls_port));
    BOOST_TEST(cfg.tls);
    cfg.tls_ca_file = redis.file("ca.pem");
    redisync::detail::io::connection conn{ctx.get_executor(), cfg};
    redisync::test::event ended{ctx.get_executor()};
    conn.run([&](error_code) { ended.notify(); });
    redisync::resp::request req;
    req.push("SET", "over", "tls");
    req.push("GET", "over");
    auto replies = co_await conn.exec(std::move(req), asio::use_awaitable);
    BOOST_TEST(replies[1].text() == "tls");
    BOOST_TEST(redis.server->command({"GET", "over"}).text() == "tls");
    conn.stop();
    BOOST_TEST(co_await ended.wait(10s));
  });
}

BOOST_AUTO_TEST_CASE(an_untrusted_certificate_is_refused) {
  tls_redis redis;
  redisync::test::run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    auto cfg = redisync::config::from_url(fmt::format("rediss://127.0.0.1:{}", redis.tls_port));
    cfg.reconnect_delay_min = 10ms;
    // Default verify paths: the self-signed certificate is not trusted.
    redisync::detail::io::connection conn{ctx.get_executor(), cfg};
    redisync::test::event ended{ctx.get_executor()};
    conn.run([&](error_code) { ended.notify(); });
    while (conn.stats().connect_attempts < 2) co_await redisync::test::sleep_for(5ms);
    BOOST_TEST(!conn.is_ready());
    BOOST_TEST(conn.stats().connects == 0u);
    conn.stop();
    BOOST_TEST(co_await ended.wait(10s));
  });
}

namespace {

// A client of `url` that retries soon and waits for a connection no longer than 2 s.
redisync::config tls_config(std::string const& url) {
  auto cfg = redisync::test::fast_config(url);
  cfg.connection_wait_limit = 2s;
  return cfg;
}

// Takes and releases a lock through `cfg`; the error of the acquire, if any.
error_code lock_once(redisync::config cfg, std::string* failure = nullptr) {
  error_code result;
  redisync::test::run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    redisync::test::running_client c{ctx, std::move(cfg)};
    auto [ec, h] = co_await c->make_lock("tls:lock").try_acquire(1s, asio::as_tuple(asio::use_awaitable));
    result = ec;
    if (h) co_await h->release(asio::use_awaitable);
    if (failure) *failure = c->last_connect_failure();
    co_await c.stop();
  });
  return result;
}

}  // namespace

// Redis asks for client certificates by default (tls-auth-clients yes): the library could present
// none, so it could not use such a server at all.
BOOST_AUTO_TEST_CASE(a_client_certificate_from_the_url_or_the_config_is_presented_to_a_server_that_asks) {
  tls_redis redis{true};
  auto const query = fmt::format("tls_ca_file={}&tls_cert_file={}&tls_key_file={}", redis.file("ca.pem"),
                                 redis.file("client.pem"), redis.file("client.key"));
  auto from_url = tls_config(redis.url(query));
  BOOST_TEST(from_url.tls_cert_file == redis.file("client.pem"));
  auto const ec = lock_once(from_url);
  BOOST_TEST(!ec, ec.message());
  auto from_config = tls_config(redis.url());
  from_config.tls_ca_file = redis.file("ca.pem");
  from_config.tls_cert_file = redis.file("client.pem");
  from_config.tls_key_file = redis.file("client.key");
  auto const again = lock_once(from_config);
  BOOST_TEST(!again, again.message());
}

BOOST_AUTO_TEST_CASE(a_server_that_asks_refuses_no_certificate_and_a_strangers_within_the_wait_naming_the_cause) {
  tls_redis redis{true};
  // The server's alert names the cause, or, when its reset came first and lost the alert, the
  // client's hint does.
  for (auto const& [cert, cause] : {std::pair<std::string, std::string>{"", "set tls_cert_file and tls_key_file"},
                                    {"stranger", "client certificate"}}) {
    BOOST_TEST_CONTEXT("certificate '" << cert << "'") {
      auto cfg = tls_config(redis.url("tls_ca_file=" + redis.file("ca.pem")));
      if (!cert.empty()) {
        cfg.tls_cert_file = redis.file(cert + ".pem");
        cfg.tls_key_file = redis.file(cert + ".key");
      }
      std::string failure;
      auto const t0 = std::chrono::steady_clock::now();
      auto const ec = lock_once(cfg, &failure);
      BOOST_TEST((ec == redisync::error::not_connected), ec.message());
      BOOST_TEST((std::chrono::steady_clock::now() - t0 < 5s));
      BOOST_TEST(failure.find(cause) != std::string::npos, failure);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_server_that_does_not_ask_takes_a_client_with_or_without_certificate) {
  tls_redis redis{false};
  auto const ca = "tls_ca_file=" + redis.file("ca.pem");
  auto const plain = lock_once(tls_config(redis.url(ca)));
  BOOST_TEST(!plain, plain.message());
  auto const with_cert = lock_once(tls_config(
      redis.url(ca + "&tls_cert_file=" + redis.file("client.pem") + "&tls_key_file=" + redis.file("client.key"))));
  BOOST_TEST(!with_cert, with_cert.message());
}

BOOST_AUTO_TEST_CASE(a_private_ca_is_needed_to_verify_the_server_unless_verification_is_off) {
  tls_redis redis;
  std::string failure;
  auto const ec = lock_once(tls_config(redis.url()), &failure);
  BOOST_TEST((ec == redisync::error::not_connected), ec.message());
  BOOST_TEST(failure.find("certificate verify failed") != std::string::npos, failure);
  BOOST_TEST(failure.find("set tls_ca_file") != std::string::npos, failure);
  auto const unverified = lock_once(tls_config(redis.url("tls_verify=no")));
  BOOST_TEST(!unverified, unverified.message());
}

BOOST_AUTO_TEST_CASE(tls_settings_that_cannot_work_are_refused_when_the_client_is_made_naming_the_setting) {
  tls_redis redis;
  auto problem_of = [&](std::string const& url) { return redisync::config::url_problem(url); };
  BOOST_TEST(problem_of("redis://127.0.0.1:1/?tls_ca_file=/x").find("use rediss://") != std::string::npos);
  BOOST_TEST(problem_of(redis.url("tls_verify=maybe")).find("tls_verify must be yes or no") != std::string::npos);
  BOOST_TEST(problem_of(redis.url("timeout=1")).find("'timeout'") != std::string::npos);
  auto missing = tls_config(redis.url("tls_ca_file=/nonexistent/ca.pem"));
  BOOST_TEST(missing.problem().find("tls_ca_file '/nonexistent/ca.pem' cannot be read") != std::string::npos,
             missing.problem());
  auto half = tls_config(redis.url("tls_cert_file=" + redis.file("client.pem")));
  BOOST_TEST(half.problem() == "tls_cert_file and tls_key_file go together");
  asio::io_context ctx;
  BOOST_CHECK_THROW((redisync::client{ctx.get_executor(), missing}), boost::system::system_error);
  // A key of another certificate: every connect fails, named.
  auto mismatched = tls_config(redis.url("tls_ca_file=" + redis.file("ca.pem")));
  mismatched.tls_cert_file = redis.file("client.pem");
  mismatched.tls_key_file = redis.file("stranger.key");
  std::string failure;
  auto const ec = lock_once(mismatched, &failure);
  BOOST_TEST((ec == redisync::error::not_connected), ec.message());
  BOOST_TEST(failure.find("TLS setup: tls_key_file: key values mismatch") != std::string::npos, failure);
}

BOOST_AUTO_TEST_SUITE_END()
