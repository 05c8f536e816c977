// The connection's sessions against a real redis-server: polling for due replies, pushes and
// resubscription, authentication.

#include "support/connection_fixture.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <fmt/core.h>

#include <array>
#include <atomic>
#include <functional>

namespace asio = boost::asio;
using redisync::config;
using namespace redisync::test;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_SUITE(connection_sessions)

BOOST_FIXTURE_TEST_CASE(replies_due_after_a_read_are_read_by_polling, connection_env) {
  run([&](asio::io_context&, connection& conn) -> asio::awaitable<void> {
    co_await conn.exec(command("PING"), asio::use_awaitable);
    auto const before = conn.stats();
    co_await incr_in_sequence(conn, "polled", 100);
    auto const after = conn.stats();
    // Generous: a reply later than 10 ms (a stalled machine) is read after a sleep instead.
    BOOST_TEST(after.reply_spin_hits - before.reply_spin_hits >= 50u);
  }, [](config& cfg) {
    cfg.reply_spin = 10ms;  // far longer than a loopback round trip
  });
}

BOOST_FIXTURE_TEST_CASE(a_reply_slower_than_the_spin_budget_is_read_after_a_sleep, connection_env) {
  run([&](asio::io_context&, connection& conn) -> asio::awaitable<void> {
    co_await conn.exec(command("PING"), asio::use_awaitable);
    auto const before = conn.stats();
    // BLPOP on an empty list replies with a null after its 100 ms timeout.
    auto const reply = co_await conn.exec(command("BLPOP", "empty", "0.1"), asio::use_awaitable);
    BOOST_TEST(reply.at(0).is_null());
    BOOST_TEST(conn.stats().reply_spin_misses - before.reply_spin_misses == 1u);
    auto const pong = co_await conn.exec(command("PING"), asio::use_awaitable);
    BOOST_TEST(pong.at(0).text() == "PONG");
  }, [](config& cfg) {
    cfg.reply_spin = 1ms;
  });
}

BOOST_FIXTURE_TEST_CASE(with_a_spin_budget_of_zero_the_connection_never_polls, connection_env) {
  run([&](asio::io_context&, connection& conn) -> asio::awaitable<void> {
    co_await incr_in_sequence(conn, "slept", 20);
    BOOST_TEST(conn.stats().reply_spin_hits == 0u);
    BOOST_TEST(conn.stats().reply_spin_misses == 0u);
  }, [](config& cfg) {
    cfg.reply_spin = 0us;
  });
}

BOOST_AUTO_TEST_CASE(stopping_while_polling_for_a_reply_ends_the_run_and_the_request) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    auto cfg = config_for(redis);
    cfg.reply_spin = 10ms;
    cfg.health_check_interval = 0ms;  // BLPOP blocks the connection on purpose
    connection conn{ctx.get_executor(), cfg};
    running r{conn};
    co_await conn.exec(command("PING"), asio::use_awaitable);
    // Made while the PING's reply is handled: the reader polls for this reply for 10 ms.
    outcome blpop{ctx.get_executor()};
    conn.exec(command("BLPOP", "never", "0"), blpop.handler());
    co_await redisync::test::sleep_for(1ms);  // lands inside the poll, or in the sleep after it
    co_await r.stop();
    BOOST_TEST((*r.ended == asio::error::operation_aborted));
    BOOST_TEST_REQUIRE(co_await blpop.done.wait(10s));
    BOOST_TEST((*blpop.ec == redisync::error::ambiguous));
  });
}

BOOST_AUTO_TEST_CASE(pushes_arrive_on_the_same_connection_while_commands_flow) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    std::vector<std::string> messages;
    redisync::detail::io::connection_events events;
    events.push = [&](redisync::resp::value const& push) {
      auto const e = push.elements();
      if (e.size() == 3 && e[0].text() == "message") messages.emplace_back(e[2].text());
    };
    connection conn{ctx.get_executor(), config_for(redis), events};
    running r{conn};
    std::vector<std::string> const channels{"news"};  // GCC 12: no braced lists inside co_await
    co_await conn.subscribe(channels, asio::use_awaitable);
    for (int i = 0; i < 200; ++i) {
      request req;
      req.push("PUBLISH", "news", std::to_string(i));
      req.push("ECHO", fmt::format("echo-{}", i));
      auto replies = co_await conn.exec(std::move(req), asio::use_awaitable);
      BOOST_TEST_REQUIRE(replies.size() == 2u);
      BOOST_TEST(replies[0].integer() == 1);
      BOOST_TEST(replies[1].text() == fmt::format("echo-{}", i));
    }
    co_await conn.exec(command("PING"), asio::use_awaitable);
    BOOST_TEST_REQUIRE(messages.size() == 200u);
    for (int i = 0; i < 200; ++i) BOOST_TEST(messages[i] == std::to_string(i));
    co_await conn.unsubscribe(channels, asio::use_awaitable);
    BOOST_TEST(redis.command({"PUBSUB", "NUMSUB", "news"}).elements()[1].integer() == 0);
    co_await r.stop();
  });
}

BOOST_AUTO_TEST_CASE(channels_are_subscribed_again_after_a_reconnect) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    auto cfg = config_for(redis);
    cfg.client_name = "subscriber";
    event message{ctx.get_executor()};
    event connected{ctx.get_executor()};
    redisync::detail::io::connection_events events;
    events.push = [&](redisync::resp::value const& push) {
      auto const e = push.elements();
      if (e.size() == 3 && e[0].text() == "message" && e[2].text() == "after") message.notify();
    };
    events.connected = [&] { connected.notify(); };
    connection conn{ctx.get_executor(), cfg, events};
    running r{conn};
    std::vector<std::string> const channels{"events"};
    co_await conn.subscribe(channels, asio::use_awaitable);
    connected.reset();
    kill_client(redis, "subscriber");
    BOOST_TEST_REQUIRE(co_await connected.wait(10s));
    // The handshake re-subscribed; a round trip after it proves the confirmation was consumed.
    co_await conn.exec(command("PING"), asio::use_awaitable);
    BOOST_TEST(redis.command({"PUBLISH", "events", "after"}).integer() == 1);
    BOOST_TEST(co_await message.wait(10s));
    co_await r.stop();
  });
}

BOOST_AUTO_TEST_CASE(wrong_password_fails_fast_with_a_typed_error_and_does_not_reconnect) {
  redisync::process::redis_options options;
  options.password = "right";
  redisync::process::redis_server redis{options};
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    auto cfg = config_for(redis);
    cfg.password = "wrong";
    connection conn{ctx.get_executor(), cfg};
    running r{conn};
    auto [ec, replies] = co_await conn.exec(command("PING"), tuple_awaitable);
    BOOST_TEST((ec == redisync::error::auth_failed), ec.message());
    BOOST_TEST_REQUIRE(co_await r.done.wait(10s));
    BOOST_TEST((*r.ended == redisync::error::auth_failed));
    BOOST_TEST(conn.stats().connect_attempts == 1u);
    // Later requests fail at once with the same reason.
    auto [ec2, replies2] = co_await conn.exec(command("PING"), tuple_awaitable);
    BOOST_TEST((ec2 == redisync::error::auth_failed));
  });
}

BOOST_AUTO_TEST_CASE(password_and_database_from_the_url_are_used) {
  redisync::process::redis_options options;
  options.password = "s3cret";
  redisync::process::redis_server redis{options};
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    auto cfg = config::from_url(fmt::format("redis://default:s3cret@127.0.0.1:{}/3", redis.port()));
    cfg.client_name = "named-client";
    connection conn{ctx.get_executor(), cfg};
    running r{conn};
    co_await conn.exec(command("SET", "in-db-3", "1"), asio::use_awaitable);
    BOOST_TEST(redis.command({"SELECT", "3"}).text() == "OK");
    auto name = co_await conn.exec(command("CLIENT", "GETNAME"), asio::use_awaitable);
    BOOST_TEST(name[0].text() == "named-client");
    auto db = co_await conn.exec(command("EXISTS", "in-db-3"), asio::use_awaitable);
    BOOST_TEST(db[0].integer() == 1);
    BOOST_TEST(redis.command({"EXISTS", "in-db-3"}).integer() == 0);  // db 0
    co_await r.stop();
  });
}

BOOST_AUTO_TEST_SUITE_END()
