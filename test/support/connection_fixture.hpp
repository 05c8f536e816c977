#pragma once

// Helpers for the connection tests: a connection to a private redis-server, requests, clients to
// kill, and the outcomes of requests that a test acts on while they are pending.

#include "io/connection.hpp"
#include "testbed/redis_server.hpp"
#include "support/async_test.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace redisync::test {

using connection = detail::io::connection;
using detail::io::response;
using error_code = boost::system::error_code;
using resp::request;

inline constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

inline config config_for(redisync::process::redis_server const& redis) {
  auto cfg = config::from_url(redis.url());
  cfg.reconnect_delay_min = 10ms;
  cfg.reconnect_delay_max = 100ms;
  return cfg;
}

inline request command(auto const&... args) {
  request req;
  req.push(args...);
  return req;
}

// INCRs `key` n times from a fresh key, each INCR made while the reply to the one before is handled.
inline asio::awaitable<void> incr_in_sequence(connection& conn, std::string key, int n) {
  for (int i = 1; i <= n; ++i) {
    auto const reply = co_await conn.exec(command("INCR", key), asio::use_awaitable);
    BOOST_TEST(reply.at(0).integer() == i);
  }
}

// The id of the client named `name`, from CLIENT LIST.
inline std::string client_id(redisync::process::redis_server const& redis, std::string_view name) {
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

inline void kill_client(redisync::process::redis_server const& redis, std::string_view name) {
  auto const id = client_id(redis, name);
  BOOST_TEST_REQUIRE(!id.empty());
  redis.command({"CLIENT", "KILL", "ID", id});
}

// Runs worker(0) ... worker(count - 1) as coroutines, waits for all, and checks that none threw.
template <class Worker>
inline asio::awaitable<void> run_workers(asio::io_context& ctx, int count, Worker& worker) {
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

// A test case's private redis-server, and run(): an io_context with a connection to that server
// running on it, the body, then the connection stopped and no work left behind.
struct connection_env {
  process::redis_server redis;

  using body_type = std::function<asio::awaitable<void>(asio::io_context&, connection&)>;
  // `tune` changes the test configuration (config_for) before the connection is made.
  void run(body_type body, std::function<void(config&)> tune = {}) {
    run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
      auto cfg = config_for(redis);
      if (tune) tune(cfg);
      connection conn{ctx.get_executor(), cfg};
      running r{conn};
      co_await body(ctx, conn);
      co_await r.stop();
    });
  }
};

}  // namespace redisync::test
