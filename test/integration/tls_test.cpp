// rediss:// through Asio SSL against a redis-server with a TLS port and a self-signed certificate.

#include "io/connection.hpp"

#include "process/redis_server.hpp"
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
