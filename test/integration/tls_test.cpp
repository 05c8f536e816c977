// rediss:// through Asio SSL against a redis-server with a TLS port and a self-signed certificate.

#include "io/connection.hpp"

#include "process/redis_server.hpp"
#include "support/async_test.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>
#include <fmt/core.h>

#include <cstdlib>

namespace asio = boost::asio;
using boost::system::error_code;
using namespace std::chrono_literals;

namespace {

struct tls_redis {
  std::filesystem::path dir;
  std::uint16_t tls_port = redisync::process::free_loopback_port();
  std::unique_ptr<redisync::process::redis_server> server;

  tls_redis() {
    dir = std::filesystem::temp_directory_path() / fmt::format("redisync-tls-{}", tls_port);
    std::filesystem::create_directories(dir);
    auto const cmd = fmt::format(
        "openssl req -x509 -newkey rsa:2048 -nodes -keyout {0}/key.pem -out {0}/cert.pem -days 1 "
        "-subj /CN=localhost -addext subjectAltName=IP:127.0.0.1,DNS:localhost >/dev/null 2>&1",
        dir.string());
    BOOST_TEST_REQUIRE(std::system(cmd.c_str()) == 0);
    redisync::process::redis_options options;
    options.extra_args = {"--tls-port",          std::to_string(tls_port),
                          "--tls-cert-file",     (dir / "cert.pem").string(),
                          "--tls-key-file",      (dir / "key.pem").string(),
                          "--tls-ca-cert-file",  (dir / "cert.pem").string(),
                          "--tls-auth-clients",  "no"};
    server = std::make_unique<redisync::process::redis_server>(options);
  }
  ~tls_redis() {
    server.reset();
    std::filesystem::remove_all(dir);
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(tls)

BOOST_AUTO_TEST_CASE(rediss_url_connects_over_tls_and_verifies_the_server) {
  tls_redis redis;
  redisync::test::run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    auto cfg = redisync::config::from_url(fmt::format("rediss://127.0.0.1:{}", redis.tls_port));
    BOOST_TEST(cfg.tls);
    cfg.tls_ca_file = (redis.dir / "cert.pem").string();
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

BOOST_AUTO_TEST_SUITE_END()
