// When Redis cannot be reached: every wait is bounded, the error is typed, the client can say why,
// and the connection's story reaches the event sink.

#include "support/connection_fixture.hpp"
#include "support/lock_fixture.hpp"

#include <redisync/event.hpp>
#include <redisync/with_lock.hpp>

#include <boost/asio/ip/tcp.hpp>

#include <algorithm>
#include <chrono>
#include <vector>

namespace asio = boost::asio;
using redisync::config;
using redisync::event_kind;
using namespace redisync::test;
using namespace std::chrono_literals;

namespace {

using clock_type = std::chrono::steady_clock;

config config_for_port(std::uint16_t port) {
  auto cfg = config::from_url("redis://127.0.0.1:" + std::to_string(port));
  cfg.reconnect_delay_min = 20ms;
  cfg.reconnect_delay_max = 100ms;
  return cfg;
}

// The kinds of event the client reported, in order.
struct event_log {
  std::vector<event_kind> kinds;
  void attach(config& cfg) {
    cfg.on_event = [this](redisync::event const& e) { kinds.push_back(e.kind); };
  }
  bool has(event_kind k) const { return std::find(kinds.begin(), kinds.end(), k) != kinds.end(); }
};


}  // namespace

BOOST_AUTO_TEST_SUITE(unreachable)

// try_acquire(2s) and with_lock({.wait = 1s}) took the connection wait (10 s) while Redis was down.
BOOST_AUTO_TEST_CASE(the_callers_wait_bounds_the_wait_for_a_connection_too) {
  auto cfg = config_for_port(redisync::process::free_loopback_port());  // connection_wait_limit: 10 s
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, cfg};
    auto const t0 = clock_type::now();
    auto [ec, h] = co_await c->make_lock("nowhere").try_acquire(1s, asio::as_tuple(asio::use_awaitable));
    auto const took = clock_type::now() - t0;
    BOOST_TEST((ec == redisync::error::not_connected), ec.message());
    BOOST_TEST((took >= 900ms && took < 3s), std::chrono::duration_cast<std::chrono::milliseconds>(took).count());
    auto const t1 = clock_type::now();
    auto body = [](redisync::held&) -> asio::awaitable<void> { co_return; };
    auto [wec] = co_await redisync::with_lock(c->make_lock("nowhere"), {.wait = 1s}, body,
                                              asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(static_cast<bool>(wec));
    BOOST_TEST((clock_type::now() - t1 < 3s));
    // A wait of zero is one attempt: it does not wait for a connection at all.
    auto const t2 = clock_type::now();
    auto [zec, none] = co_await c->make_lock("nowhere").try_acquire(0s, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((zec == redisync::error::not_connected), zec.message());
    BOOST_TEST((clock_type::now() - t2 < 1s));
    co_await c.stop();
  });
}

// A wait of zero failed with not_connected when it came before the first connection was made.
BOOST_FIXTURE_TEST_CASE(a_try_acquire_without_wait_right_after_start_waits_for_the_first_connection, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto h = co_await c.make_lock("first").try_acquire(0ms, asio::use_awaitable);
    BOOST_TEST_REQUIRE(h.has_value());
    co_await h->release(asio::use_awaitable);
  });
}

BOOST_AUTO_TEST_CASE(an_acquire_while_nothing_listens_fails_with_not_connected_within_the_connection_wait) {
  auto cfg = config_for_port(redisync::process::free_loopback_port());
  cfg.connection_wait_limit = 500ms;
  event_log log;
  log.attach(cfg);
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, cfg};
    auto const t0 = clock_type::now();
    auto [ec, h] = co_await c->make_lock("nowhere").acquire(asio::as_tuple(asio::use_awaitable));
    auto const took = clock_type::now() - t0;
    BOOST_TEST((ec == redisync::error::not_connected), ec.message());
    BOOST_TEST((took >= 400ms && took < 5s), std::chrono::duration_cast<std::chrono::milliseconds>(took).count());
    auto const why = c->last_connect_failure();
    BOOST_TEST(why.find("127.0.0.1:") != std::string::npos, why);
    BOOST_TEST(why.find("connect: ") != std::string::npos, why);
    BOOST_TEST(why.find("refused") != std::string::npos, why);
    BOOST_TEST(log.has(event_kind::connecting));
    BOOST_TEST(log.has(event_kind::connect_failed));
    BOOST_TEST(log.has(event_kind::reconnect_scheduled));
    BOOST_TEST(!log.has(event_kind::connected));
    co_await c.stop();
  });
}

// A cluster URL that reaches one server (no cluster node) is refused at once, saying so: requests do
// not go to it as if it were the cluster, nor wait out their connection wait.
BOOST_AUTO_TEST_CASE(a_cluster_url_that_reaches_a_standalone_server_is_refused_with_the_reason) {
  redisync::process::redis_server redis;
  auto cfg = config::from_url("redis-cluster://127.0.0.1:" + std::to_string(redis.port()));
  event_log log;
  log.attach(cfg);
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    redisync::client c{ctx.get_executor(), cfg};
    std::optional<boost::system::error_code> ran;
    c.run([&](boost::system::error_code ec) { ran = ec; });
    auto const t0 = clock_type::now();
    auto [ec, h] = co_await c.make_lock("anywhere").acquire(asio::as_tuple(asio::use_awaitable));
    auto const took = clock_type::now() - t0;
    BOOST_TEST((ec == redisync::error::not_connected), ec.message());
    BOOST_TEST((took < 3s), std::chrono::duration_cast<std::chrono::milliseconds>(took).count());
    auto const why = c.last_connect_failure();
    BOOST_TEST(why.find("it is not a cluster node: use redis:// for one server") != std::string::npos, why);
    co_await wait_until([&] { return ran.has_value(); }, 5s);
    BOOST_TEST((*ran == redisync::error::handshake_failed), ran->message());
    BOOST_TEST(log.has(event_kind::connect_failed));
    BOOST_TEST(redis.command({"DBSIZE"}).integer() == 0);
  });
}

BOOST_AUTO_TEST_CASE(a_server_that_accepts_and_never_answers_fails_the_handshake_within_the_connect_timeout) {
  asio::io_context listener_ctx;
  // The kernel completes TCP connections on a listening socket nobody accepts from: a server that
  // takes the connection and never says a word.
  asio::ip::tcp::acceptor silent{listener_ctx, {asio::ip::make_address("127.0.0.1"), 0}};
  auto cfg = config_for_port(silent.local_endpoint().port());
  cfg.connect_timeout = 300ms;
  cfg.connection_wait_limit = 1s;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, cfg};
    auto [ec, replies] = co_await c->exec(command("PING"), asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((ec == redisync::error::not_connected), ec.message());
    auto const why = c->last_connect_failure();
    BOOST_TEST(why.find("handshake: no reply within 300 ms") != std::string::npos, why);
    co_await c.stop();
  });
}

BOOST_AUTO_TEST_CASE(a_request_made_before_the_server_starts_is_sent_once_it_is_up) {
  redisync::process::redis_server redis;
  redis.stop();  // its port, with nothing listening
  auto cfg = config_for_port(redis.port());
  cfg.connection_wait_limit = 20s;
  event_log log;
  log.attach(cfg);
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, cfg};
    std::optional<boost::system::error_code> result;
    c->exec(command("PING"), [&](boost::system::error_code ec, redisync::response) { result = ec; });
    co_await wait_until([&] { return log.has(event_kind::connect_failed); }, 10s);
    redis.start();
    co_await wait_until([&] { return result.has_value(); }, 15s);
    BOOST_TEST(!*result);
    BOOST_TEST(log.has(event_kind::connected));
    BOOST_TEST(c->last_connect_failure().empty());
    co_await c.stop();
  });
}

BOOST_AUTO_TEST_CASE(a_lost_connection_is_reported_with_the_next_attempt_and_the_reconnect) {
  redisync::process::redis_server redis;
  auto cfg = fast_config(redis);
  cfg.client_name = "watched";
  event_log log;
  log.attach(cfg);
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, cfg};
    co_await c->exec(command("PING"), asio::use_awaitable);
    auto const connects = c->metrics().connects;
    log.kinds.clear();
    kill_client(redis, "watched");
    co_await wait_until([&] { return c->metrics().connects > connects; }, 10s);
    std::vector<std::string> told;
    for (auto k : log.kinds) told.emplace_back(redisync::to_string(k));
    std::vector<std::string> const expected{"disconnected", "reconnect scheduled", "connecting", "connected"};
    BOOST_TEST(told == expected, boost::test_tools::per_element());
    co_await c.stop();
  });
}

BOOST_AUTO_TEST_SUITE_END()
