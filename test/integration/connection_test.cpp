// The connection against a real redis-server: pipelining, ordering, ambiguity, cancellation.

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

BOOST_AUTO_TEST_SUITE(connection_against_redis)

BOOST_FIXTURE_TEST_CASE(ten_thousand_concurrent_execs_from_100_coroutines_get_their_own_replies, connection_env) {
  run([&](asio::io_context& ctx, connection& conn) -> asio::awaitable<void> {
    std::atomic<int> mismatches{0};
    std::atomic<int> replies{0};
    auto worker = [&](int w) -> asio::awaitable<void> {
      using op_type = decltype(conn.exec(request{}, asio::deferred));
      std::vector<op_type> ops;
      for (int i = 0; i < 100; ++i) {
        ops.push_back(conn.exec(command("ECHO", fmt::format("{}-{}", w, i)), asio::deferred));
      }
      auto group = asio::experimental::make_parallel_group(std::move(ops));
      auto [completion_order, errors, values] =
          co_await group.async_wait(asio::experimental::wait_for_all(), asio::use_awaitable);
      for (std::size_t i = 0; i < values.size(); ++i) {
        ++replies;
        if (errors[i] || values[i].size() != 1 ||
            values[i][0].text() != fmt::format("{}-{}", w, i)) {
          ++mismatches;
        }
      }
    };
    co_await run_workers(ctx, 100, worker);
    BOOST_TEST(replies.load() == 10000);
    BOOST_TEST(mismatches.load() == 0);
    // Auto-pipelining: far fewer socket writes than requests.
    BOOST_TEST(conn.stats().writes < 5000u);
  });
}

BOOST_FIXTURE_TEST_CASE(requests_made_by_reply_handlers_go_out_in_groups_of_at_most_16, connection_env) {
  run([&](asio::io_context& ctx, connection& conn) -> asio::awaitable<void> {
    co_await conn.exec(command("PING"), asio::use_awaitable);  // connected: no backlog at the start
    auto const before = conn.stats();
    int wrong = 0;
    // Each coroutine makes its next request from the handler of its last reply.
    auto worker = [&](int w) -> asio::awaitable<void> {
      for (int i = 0; i < 100; ++i) {
        auto const text = fmt::format("{}-{}", w, i);
        auto replies = co_await conn.exec(command("ECHO", text), asio::use_awaitable);
        if (replies.size() != 1 || replies[0].text() != text) ++wrong;
      }
    };
    co_await run_workers(ctx, 64, worker);
    BOOST_TEST(wrong == 0);
    auto const requests = conn.stats().requests_written - before.requests_written;
    auto const writes = conn.stats().writes - before.writes;
    BOOST_TEST(requests == 6400u);
    BOOST_TEST(requests <= 16 * writes);  // groups, so that Redis starts on them early
    BOOST_TEST(writes * 2 <= requests);   // and still pipelined
  });
}

BOOST_FIXTURE_TEST_CASE(a_request_larger_than_the_socket_takes_at_once_is_written_whole_and_in_order, connection_env) {
  run([&](asio::io_context&, connection& conn) -> asio::awaitable<void> {
    std::string big(16 << 20, '\0');  // far more than a loopback socket buffer holds
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 23);
    // Queued behind the big one while its remainder is still being written.
    auto set = conn.exec(command("SET", "big", big), asio::deferred);
    auto echo = conn.exec(command("ECHO", "after"), asio::deferred);
    auto get = conn.exec(command("GET", "big"), asio::deferred);
    auto [order, set_ec, set_reply, echo_ec, echo_reply, get_ec, get_reply] =
        co_await asio::experimental::make_parallel_group(std::move(set), std::move(echo),
                                                         std::move(get))
            .async_wait(asio::experimental::wait_for_all(), asio::use_awaitable);
    BOOST_TEST(!set_ec);
    BOOST_TEST(!echo_ec);
    BOOST_TEST(!get_ec);
    BOOST_TEST_REQUIRE(set_reply.size() == 1u);
    BOOST_TEST(set_reply[0].text() == "OK");
    BOOST_TEST_REQUIRE(echo_reply.size() == 1u);
    BOOST_TEST(echo_reply[0].text() == "after");
    BOOST_TEST_REQUIRE(get_reply.size() == 1u);
    BOOST_TEST((get_reply[0].text() == big));
  });
}

BOOST_FIXTURE_TEST_CASE(client_kill_under_load_gives_ambiguous_or_a_correct_reply_never_a_wrong_one, connection_env) {
  run([&](asio::io_context& ctx, connection& conn) -> asio::awaitable<void> {
    int ok = 0, ambiguous = 0, wrong = 0, other = 0;
    bool stop = false;
    auto worker = [&](int w) -> asio::awaitable<void> {
      for (int i = 0; !stop; ++i) {
        auto const expected = fmt::format("{}-{}", w, i);
        auto [ec, replies] = co_await conn.exec(command("ECHO", expected), tuple_awaitable);
        if (!ec) {
          (replies.size() == 1 && replies[0].text() == expected) ? ++ok : ++wrong;
        } else if (ec == redisync::error::ambiguous) {
          ++ambiguous;
        } else {
          ++other;
        }
      }
    };
    for (int w = 0; w < 20; ++w) asio::co_spawn(ctx, worker(w), asio::detached);
    // Kill the connection three times while the workers keep it busy.
    for (int kill = 0; kill < 3; ++kill) {
      int const before = ok;
      while (ok < before + 500) co_await redisync::test::sleep_for(1ms);
      kill_client(redis, "victim");
    }
    int const before = ok;
    while (ok < before + 500) co_await redisync::test::sleep_for(1ms);
    stop = true;
    co_await redisync::test::sleep_for(50ms);
    BOOST_TEST(wrong == 0);
    BOOST_TEST(other == 0);
    BOOST_TEST(ambiguous > 0);
    BOOST_TEST(conn.stats().connects >= 4u);
  }, [](config& cfg) {
    cfg.client_name = "victim";
  });
}

BOOST_FIXTURE_TEST_CASE(written_request_gets_ambiguous_when_the_connection_drops, connection_env) {
  run([&](asio::io_context& ctx, connection& conn) -> asio::awaitable<void> {
    co_await conn.exec(command("PING"), asio::use_awaitable);
    outcome blpop{ctx.get_executor()};
    conn.exec(command("BLPOP", "never", "0"), blpop.handler());
    // The BLPOP is written once CLIENT LIST shows it blocked.
    while (redis.command({"INFO", "clients"}).text().find("blocked_clients:1") == std::string::npos) {
      co_await redisync::test::sleep_for(2ms);
    }
    kill_client(redis, "blocked");
    BOOST_TEST_REQUIRE(co_await blpop.done.wait(10s));
    BOOST_TEST((*blpop.ec == redisync::error::ambiguous));
  }, [](config& cfg) {
    cfg.client_name = "blocked";
    cfg.health_check_interval = 0ms;  // BLPOP blocks the connection on purpose
  });
}

BOOST_FIXTURE_TEST_CASE(unwritten_request_waits_for_the_reconnect_or_fails_as_its_options_say, connection_env) {
  run([&](asio::io_context& ctx, connection& conn) -> asio::awaitable<void> {
    co_await conn.exec(command("PING"), asio::use_awaitable);
    redis.stop();
    while (conn.is_ready()) co_await redisync::test::sleep_for(1ms);

    request fail_fast{request::options{.wait_for_connection = false}};
    fail_fast.push("PING");
    auto [ec1, r1] = co_await conn.exec(std::move(fail_fast), tuple_awaitable);
    BOOST_TEST((ec1 == redisync::error::not_connected));

    outcome waited{ctx.get_executor()};
    conn.exec(command("SET", "after", "reconnect"), waited.handler());
    co_await redisync::test::sleep_for(50ms);
    BOOST_TEST(!waited.done.is_set());
    redis.start();
    BOOST_TEST_REQUIRE(co_await waited.done.wait(10s));
    BOOST_TEST(!*waited.ec);
    BOOST_TEST(redis.command({"GET", "after"}).text() == "reconnect");
  });
}

BOOST_AUTO_TEST_CASE(cancelling_an_unwritten_request_removes_it) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    connection conn{ctx.get_executor(), config_for(redis)};
    asio::cancellation_signal signal;
    // The server is down: the request sits in the queue, waiting for a connection.
    redis.stop();
    running r{conn};
    outcome incr{ctx.get_executor()};
    conn.exec(command("INCR", "counter"), asio::bind_cancellation_slot(signal.slot(), incr.handler()));
    co_await asio::post(ctx, asio::use_awaitable);  // the request is queued on the strand
    signal.emit(asio::cancellation_type::total);
    BOOST_TEST_REQUIRE(co_await incr.done.wait(10s));
    BOOST_TEST((*incr.ec == asio::error::operation_aborted));
    redis.start();
    co_await conn.exec(command("PING"), asio::use_awaitable);
    BOOST_TEST(redis.command({"EXISTS", "counter"}).integer() == 0);
    co_await r.stop();
  });
}

BOOST_FIXTURE_TEST_CASE(cancelling_a_written_request_completes_at_once_and_hands_the_late_reply_over, connection_env) {
  run([&](asio::io_context& ctx, connection& conn) -> asio::awaitable<void> {
    co_await conn.exec(command("PING"), asio::use_awaitable);
    asio::cancellation_signal signal;
    std::optional<error_code> result;
    event completed{ctx.get_executor()};
    response late_replies;
    event late{ctx.get_executor()};
    conn.exec(command("BLPOP", "list", "0"),
              [&](error_code ec, response replies) {
                BOOST_TEST(!ec);
                late_replies = std::move(replies);
                late.notify();
              },
              asio::bind_cancellation_slot(signal.slot(), [&](error_code ec, response) {
                result = ec;
                completed.notify();
              }));
    while (redis.command({"INFO", "clients"}).text().find("blocked_clients:1") == std::string::npos) {
      co_await redisync::test::sleep_for(2ms);
    }
    signal.emit(asio::cancellation_type::terminal);
    BOOST_TEST_REQUIRE(co_await completed.wait(10s));  // at once, while BLPOP still blocks
    BOOST_TEST((*result == asio::error::operation_aborted));
    BOOST_TEST(!late.is_set());
    redis.command({"RPUSH", "list", "x"});
    BOOST_TEST_REQUIRE(co_await late.wait(10s));
    BOOST_TEST_REQUIRE(late_replies.size() == 1u);
    BOOST_TEST(late_replies[0].elements()[1].text() == "x");
    // Later requests are still matched to their own replies.
    auto replies = co_await conn.exec(command("ECHO", "next"), asio::use_awaitable);
    BOOST_TEST(replies[0].text() == "next");
  }, [](config& cfg) {
    cfg.health_check_interval = 0ms;
  });
}

BOOST_AUTO_TEST_SUITE_END()
