// The connection against a real redis-server (and a scripted fake server for injected errors).

#include <redisync/connection.hpp>

#include "process/redis_server.hpp"
#include "script/script.hpp"
#include "support/async_test.hpp"
#include "support/fake_redis.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>
#include <fmt/core.h>

#include <array>
#include <atomic>
#include <functional>
#include <optional>

namespace asio = boost::asio;
using boost::system::error_code;
using redisync::config;
using redisync::connection;
using redisync::response;
using redisync::resp::request;
using redisync::test::event;
using redisync::test::run_async;
using namespace std::chrono_literals;

namespace {

constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

config config_for(redisync::process::redis_server const& redis) {
  auto cfg = config::from_url(redis.url());
  cfg.reconnect_delay_min = 10ms;
  cfg.reconnect_delay_max = 100ms;
  return cfg;
}

config with_reply_spin(redisync::process::redis_server const& redis, std::chrono::microseconds spin) {
  auto cfg = config_for(redis);
  cfg.reply_spin = spin;
  return cfg;
}

request command(auto const&... args) {
  request req;
  req.push(args...);
  return req;
}

// INCRs `key` n times from a fresh key, each INCR made while the reply to the one before is handled.
asio::awaitable<void> incr_in_sequence(connection& conn, std::string key, int n) {
  for (int i = 1; i <= n; ++i) {
    auto const reply = co_await conn.exec(command("INCR", key), asio::use_awaitable);
    BOOST_TEST(reply.at(0).integer() == i);
  }
}

// The id of the client named `name`, from CLIENT LIST.
std::string client_id(redisync::process::redis_server const& redis, std::string_view name) {
  std::string const list{redis.command({"CLIENT", "LIST"}).text()};
  std::size_t pos = 0;
  while (pos < list.size()) {
    std::size_t const end = list.find('\n', pos);
    std::string_view line{list.data() + pos, (end == std::string::npos ? list.size() : end) - pos};
    if (line.find(" name=" + std::string{name} + " ") != std::string_view::npos) {
      auto const id_start = line.find("id=") + 3;
      return std::string{line.substr(id_start, line.find(' ', id_start) - id_start)};
    }
    pos = end == std::string::npos ? list.size() : end + 1;
  }
  return {};
}

void kill_client(redisync::process::redis_server const& redis, std::string_view name) {
  auto const id = client_id(redis, name);
  BOOST_TEST_REQUIRE(!id.empty());
  redis.command({"CLIENT", "KILL", "ID", id});
}

// Runs worker(0) ... worker(count - 1) as coroutines, waits for all, and checks that none threw.
template <class Worker>
asio::awaitable<void> run_workers(asio::io_context& ctx, int count, Worker& worker) {
  std::vector<decltype(asio::co_spawn(ctx, worker(0), asio::deferred))> workers;
  for (int w = 0; w < count; ++w) workers.push_back(asio::co_spawn(ctx, worker(w), asio::deferred));
  auto [order, exceptions] = co_await asio::experimental::make_parallel_group(std::move(workers))
      .async_wait(asio::experimental::wait_for_all(), asio::use_awaitable);
  for (auto const& e : exceptions) BOOST_TEST(!e);
}

// The outcome of a request made with a plain callback, for tests that act while it is pending.
struct outcome {
  std::optional<error_code> ec;
  event done;
  explicit outcome(asio::any_io_executor ex) : done{std::move(ex)} {}
  auto handler() {
    return [this](error_code e, response) {
      ec = e;
      done.notify();
    };
  }
};

// Starts run() and records how it ended; a test stops it before its body returns.
struct running {
  connection& conn;
  std::optional<error_code> ended;
  event done;
  explicit running(connection& c) : conn{c}, done{c.get_executor()} {
    conn.run([this](error_code ec) {
      ended = ec;
      done.notify();
    });
  }
  asio::awaitable<void> stop() {
    conn.stop();
    BOOST_TEST_REQUIRE(co_await done.wait(10s));
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(connection_against_redis)

BOOST_AUTO_TEST_CASE(ten_thousand_concurrent_execs_from_100_coroutines_get_their_own_replies) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    connection conn{ctx.get_executor(), config_for(redis)};
    running r{conn};
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
    co_await r.stop();
  });
}

BOOST_AUTO_TEST_CASE(requests_made_by_reply_handlers_go_out_in_groups_of_at_most_16) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    connection conn{ctx.get_executor(), config_for(redis)};
    running r{conn};
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
    co_await r.stop();
  });
}

BOOST_AUTO_TEST_CASE(a_request_larger_than_the_socket_takes_at_once_is_written_whole_and_in_order) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    connection conn{ctx.get_executor(), config_for(redis)};
    running r{conn};
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
    co_await r.stop();
  });
}

BOOST_AUTO_TEST_CASE(client_kill_under_load_gives_ambiguous_or_a_correct_reply_never_a_wrong_one) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    auto cfg = config_for(redis);
    cfg.client_name = "victim";
    connection conn{ctx.get_executor(), cfg};
    running r{conn};
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
    co_await r.stop();
  });
}

BOOST_AUTO_TEST_CASE(written_request_gets_ambiguous_when_the_connection_drops) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    auto cfg = config_for(redis);
    cfg.client_name = "blocked";
    cfg.health_check_interval = 0ms;  // BLPOP blocks the connection on purpose
    connection conn{ctx.get_executor(), cfg};
    running r{conn};
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
    co_await r.stop();
  });
}

BOOST_AUTO_TEST_CASE(replies_due_after_a_read_are_read_by_polling) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    // The budget is far longer than a loopback round trip.
    connection conn{ctx.get_executor(), with_reply_spin(redis, 10ms)};
    running r{conn};
    co_await conn.exec(command("PING"), asio::use_awaitable);
    auto const before = conn.stats();
    co_await incr_in_sequence(conn, "polled", 100);
    auto const after = conn.stats();
    // Generous: a reply later than 10 ms (a stalled machine) is read after a sleep instead.
    BOOST_TEST(after.reply_spin_hits - before.reply_spin_hits >= 50u);
    co_await r.stop();
  });
}

BOOST_AUTO_TEST_CASE(a_reply_slower_than_the_spin_budget_is_read_after_a_sleep) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    connection conn{ctx.get_executor(), with_reply_spin(redis, 1ms)};
    running r{conn};
    co_await conn.exec(command("PING"), asio::use_awaitable);
    auto const before = conn.stats();
    // BLPOP on an empty list replies with a null after its 100 ms timeout.
    auto const reply = co_await conn.exec(command("BLPOP", "empty", "0.1"), asio::use_awaitable);
    BOOST_TEST(reply.at(0).is_null());
    BOOST_TEST(conn.stats().reply_spin_misses - before.reply_spin_misses == 1u);
    auto const pong = co_await conn.exec(command("PING"), asio::use_awaitable);
    BOOST_TEST(pong.at(0).text() == "PONG");
    co_await r.stop();
  });
}

BOOST_AUTO_TEST_CASE(with_a_spin_budget_of_zero_the_connection_never_polls) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    connection conn{ctx.get_executor(), with_reply_spin(redis, 0us)};
    running r{conn};
    co_await incr_in_sequence(conn, "slept", 20);
    BOOST_TEST(conn.stats().reply_spin_hits == 0u);
    BOOST_TEST(conn.stats().reply_spin_misses == 0u);
    co_await r.stop();
  });
}

BOOST_AUTO_TEST_CASE(stopping_while_polling_for_a_reply_ends_the_run_and_the_request) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    auto cfg = with_reply_spin(redis, 10ms);
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

BOOST_AUTO_TEST_CASE(unwritten_request_waits_for_the_reconnect_or_fails_as_its_options_say) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    connection conn{ctx.get_executor(), config_for(redis)};
    running r{conn};
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
    co_await r.stop();
  });
}

BOOST_AUTO_TEST_CASE(cancelling_an_unwritten_request_removes_it) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    connection conn{ctx.get_executor(), config_for(redis)};
    asio::cancellation_signal signal;
    // run() has not started: the request sits in the queue.
    outcome incr{ctx.get_executor()};
    conn.exec(command("INCR", "counter"), asio::bind_cancellation_slot(signal.slot(), incr.handler()));
    co_await asio::post(ctx, asio::use_awaitable);  // the request is queued on the strand
    signal.emit(asio::cancellation_type::total);
    BOOST_TEST_REQUIRE(co_await incr.done.wait(10s));
    BOOST_TEST((*incr.ec == asio::error::operation_aborted));
    running r{conn};
    co_await conn.exec(command("PING"), asio::use_awaitable);
    BOOST_TEST(redis.command({"EXISTS", "counter"}).integer() == 0);
    co_await r.stop();
  });
}

BOOST_AUTO_TEST_CASE(cancelling_a_written_request_completes_at_once_and_hands_the_late_reply_over) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    auto cfg = config_for(redis);
    cfg.health_check_interval = 0ms;
    connection conn{ctx.get_executor(), cfg};
    running r{conn};
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
    co_await r.stop();
  });
}

BOOST_AUTO_TEST_CASE(pushes_arrive_on_the_same_connection_while_commands_flow) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    connection conn{ctx.get_executor(), config_for(redis)};
    running r{conn};
    std::vector<std::string> messages;
    conn.set_push_handler([&](redisync::resp::value const& push) {
      auto const e = push.elements();
      if (e.size() == 3 && e[0].text() == "message") messages.emplace_back(e[2].text());
    });
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
    connection conn{ctx.get_executor(), cfg};
    running r{conn};
    event message{ctx.get_executor()};
    event connected{ctx.get_executor()};
    conn.set_push_handler([&](redisync::resp::value const& push) {
      auto const e = push.elements();
      if (e.size() == 3 && e[0].text() == "message" && e[2].text() == "after") message.notify();
    });
    conn.set_connect_handler([&] { connected.notify(); });
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

BOOST_AUTO_TEST_CASE(script_flush_between_two_script_calls_is_invisible) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    connection conn{ctx.get_executor(), config_for(redis)};
    running r{conn};
    static constexpr std::string_view source = "return ARGV[1] .. KEYS[1]";
    // The digest comes from the server, so the test does not depend on our embedding.
    auto loaded = co_await conn.exec(command("SCRIPT", "LOAD", source), asio::use_awaitable);
    std::string const digest{loaded[0].text()};
    redisync::detail::script const s{"echo", digest, source};
    redisync::detail::script_args args{{"key"}, {"value-"}};
    auto [ec1, v1] = co_await redisync::detail::run_script(conn, s, args);
    BOOST_TEST(!ec1);
    BOOST_TEST(v1.text() == "value-key");
    redis.command({"SCRIPT", "FLUSH"});
    auto [ec2, v2] = co_await redisync::detail::run_script(conn, s, args);
    BOOST_TEST(!ec2);
    BOOST_TEST(v2.text() == "value-key");
    co_await r.stop();
  });
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(connection_against_a_scripted_server)

// A server that answers the first `failures` commands after the handshake with `error_reply`.
struct flaky_server {
  int failures;
  std::string error_reply;
  int attempts = 0;
  std::string operator()(std::vector<std::string> const& cmd) {
    if (cmd[0] == "HELLO") return redisync::test::fake_redis::hello_reply();
    ++attempts;
    if (attempts <= failures) return error_reply;
    return "+OK\r\n";
  }
};

void transient_errors_are_retried(std::string error_reply) {
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    auto state = std::make_shared<flaky_server>(flaky_server{3, error_reply});
    redisync::test::fake_redis server{ctx.get_executor(),
                                      [state](auto const& cmd) { return (*state)(cmd); }};
    config cfg;
    cfg.port = server.port();
    cfg.health_check_interval = 0ms;
    connection conn{ctx.get_executor(), cfg};
    running r{conn};
    auto replies = co_await conn.exec(command("SET", "k", "v"), asio::use_awaitable);
    BOOST_TEST(replies[0].text() == "OK");
    BOOST_TEST(state->attempts == 4);

    // With a budget too short for the outage, the caller gets the typed error.
    state->attempts = 0;
    state->failures = 1000;
    co_await r.stop();
    cfg.transient_retry_budget = 100ms;
    connection short_budget{ctx.get_executor(), cfg};
    running r2{short_budget};
    auto [ec, failed] = co_await short_budget.exec(command("SET", "k", "v"), tuple_awaitable);
    BOOST_TEST(!ec);
    BOOST_TEST_REQUIRE(failed.size() == 1u);
    BOOST_TEST(failed[0].is_error());
    auto const code = redisync::check_replies(failed);
    BOOST_TEST((code == redisync::error::loading || code == redisync::error::busy));
    BOOST_TEST(state->attempts > 1);
    co_await r2.stop();
    server.close();
  });
}

BOOST_AUTO_TEST_CASE(loading_replies_are_retried_with_backoff) {
  transient_errors_are_retried("-LOADING Redis is loading the dataset in memory\r\n");
}

BOOST_AUTO_TEST_CASE(busy_replies_are_retried_with_backoff) {
  transient_errors_are_retried("-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSCRIPT.\r\n");
}

// Three calls of an item script ("k1" "a1" ... "k3" "a3"), made before the connection is up so
// that they wait in its queue together; returns what each call completed with.
asio::awaitable<std::vector<std::tuple<error_code, response>>> three_item_calls(connection& conn) {
  std::vector<std::tuple<error_code, response>> results(3);
  int done = 0;
  event all_done{co_await asio::this_coro::executor};
  for (int i = 0; i < 3; ++i) {
    std::string const key = fmt::format("k{}", i + 1), arg = fmt::format("a{}", i + 1);
    std::array<std::string_view, 1> const keys{key}, args{arg};
    request req;
    req.push_item_script_call(true, "sha", keys, args);
    auto on_reply = [&, i](error_code ec, response r) {
      results[i] = {ec, std::move(r)};
      if (++done == 3) all_done.notify();
    };
    conn.exec(std::move(req), on_reply);
  }
  BOOST_TEST_REQUIRE(co_await all_done.wait(10s));
  co_return results;
}

// A server that answers HELLO and hands every other command to `answer`, keeping what it got.
struct item_script_server {
  std::vector<std::vector<std::string>> commands;
  std::function<std::string(std::vector<std::string> const&)> answer;
  std::string operator()(std::vector<std::string> const& cmd) {
    if (cmd[0] == "HELLO") return redisync::test::fake_redis::hello_reply();
    commands.push_back(cmd);
    return answer(cmd);
  }
};

void with_item_script_server(
    std::function<std::string(std::vector<std::string> const&)> answer,
    std::function<void(item_script_server const&, std::vector<std::tuple<error_code, response>> const&)> check) {
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    auto state = std::make_shared<item_script_server>();
    redisync::test::fake_redis server{ctx.get_executor(), [state](auto const& cmd) { return (*state)(cmd); }};
    state->answer = [&](auto const& cmd) { return answer(cmd); };
    config cfg;
    cfg.port = server.port();
    cfg.health_check_interval = 0ms;
    cfg.reconnect_delay_min = 10ms;
    connection conn{ctx.get_executor(), cfg};
    running r{conn};
    auto const results = co_await three_item_calls(conn);
    check(*state, results);
    co_await r.stop();
    server.close();
  });
}

BOOST_AUTO_TEST_CASE(adjacent_item_script_calls_go_out_as_one_command_and_each_gets_its_own_reply) {
  with_item_script_server(
      [](auto const&) { return std::string{"*3\r\n:1\r\n$2\r\nr2\r\n*1\r\n:3\r\n"}; },
      [](item_script_server const& server, auto const& results) {
        BOOST_TEST_REQUIRE(server.commands.size() == 1u);
        std::vector<std::string> const expected{"EVALSHA", "sha", "3", "k1", "k2", "k3", "a1", "a2", "a3"};
        BOOST_TEST(server.commands[0] == expected, boost::test_tools::per_element());
        for (auto const& [ec, replies] : results) {
          BOOST_TEST(!ec);
          BOOST_TEST_REQUIRE(replies.size() == 1u);
        }
        BOOST_TEST(std::get<1>(results[0])[0].integer() == 1);
        BOOST_TEST(std::get<1>(results[1])[0].text() == "r2");
        BOOST_TEST(std::get<1>(results[2])[0].elements()[0].integer() == 3);  // an array item stays whole
      });
}

BOOST_AUTO_TEST_CASE(a_reply_that_fails_a_merged_command_goes_to_every_call_in_it) {
  with_item_script_server(
      [](auto const&) { return std::string{"-NOSCRIPT No matching script.\r\n"}; },
      [](item_script_server const& server, auto const& results) {
        BOOST_TEST(server.commands.size() == 1u);
        for (auto const& [ec, replies] : results) {
          BOOST_TEST(!ec);
          BOOST_TEST_REQUIRE(replies.size() == 1u);
          BOOST_TEST((redisync::check_replies(replies) == redisync::error::no_script));
        }
      });
}

BOOST_AUTO_TEST_CASE(every_call_in_a_merged_command_lost_with_the_connection_is_ambiguous) {
  with_item_script_server(
      [](auto const&) { return redisync::test::fake_redis::hang_up(); },
      [](item_script_server const& server, auto const& results) {
        BOOST_TEST(server.commands.size() == 1u);
        for (auto const& [ec, replies] : results) BOOST_TEST((ec == redisync::error::ambiguous));
      });
}

BOOST_AUTO_TEST_CASE(a_reply_nobody_asked_for_drops_the_connection) {
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    int hellos = 0;
    redisync::test::fake_redis server{ctx.get_executor(), [&](auto const& cmd) -> std::string {
                                        if (cmd[0] == "HELLO") {
                                          ++hellos;
                                          return redisync::test::fake_redis::hello_reply();
                                        }
                                        return "+OK\r\n+EXTRA\r\n";  // one reply too many
                                      }};
    config cfg;
    cfg.port = server.port();
    cfg.reconnect_delay_min = 10ms;
    connection conn{ctx.get_executor(), cfg};
    running r{conn};
    auto [ec, replies] = co_await conn.exec(command("SET", "k", "v"), tuple_awaitable);
    BOOST_TEST(!ec);  // the first reply belongs to the request
    while (hellos < 2) co_await redisync::test::sleep_for(5ms);
    BOOST_TEST(hellos >= 2);  // the extra reply was a protocol error: the connection restarted
    co_await r.stop();
    server.close();
  });
}

BOOST_AUTO_TEST_SUITE_END()
