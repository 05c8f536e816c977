// Running inside a service: completions on the caller's executor, never inside the client's strand
// (busy or blocking code after a co_await cannot stall the connection, the watchdog or other
// callers), the client's own thread for services that run one thread, loss waits that compose
// with ||, a client that was never started, and the natural lines that must not crash.

#include <redisync/redisync.hpp>

#include "support/lock_fixture.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/test/unit_test.hpp>

#include <future>
#include <thread>

namespace asio = boost::asio;
using namespace redisync::test::lock_names;
using namespace asio::experimental::awaitable_operators;

namespace {

using clock_type = std::chrono::steady_clock;

// The application's own work between two awaits: it keeps its thread busy for `d`.
void burn_cpu(std::chrono::milliseconds d) {
  auto const until = clock_type::now() + d;
  volatile std::uint64_t n = 0;
  while (clock_type::now() < until) n = n + 1;
}

redisync::resp::request ping() {
  redisync::resp::request r;
  r.push("PING");
  return r;
}

// A client on a pool of four threads, like a service's.
struct pool_client {
  asio::thread_pool pool{4};
  redisync::client client;
  pool_client(redis_server const& redis, std::function<void(redisync::config&)> tune = {})
      : client{pool.get_executor(), configured(redis, std::move(tune))} {
    client.start();
  }
  ~pool_client() {
    client.shutdown(5s, asio::use_future).wait_for(10s);
    pool.join();
  }
  static redisync::config configured(redis_server const& redis, std::function<void(redisync::config&)> tune) {
    auto cfg = redisync::test::fast_config(redis);
    if (tune) tune(cfg);
    return cfg;
  }
  template <class T>
  T run(asio::awaitable<T> body) {
    auto f = asio::co_spawn(pool, std::move(body), asio::use_future);
    BOOST_TEST_REQUIRE((f.wait_for(60s) == std::future_status::ready), "the test body did not finish in time");
    return f.get();
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(running_in_a_service)

// 500 ms of CPU work after an acquire delayed another coroutine's PING by ~480 ms: the work ran
// inside the client's strand.
BOOST_FIXTURE_TEST_CASE(a_busy_continuation_does_not_delay_another_callers_command, lock_env) {
  pool_client p{redis};
  std::promise<void> holding;
  auto busy = asio::co_spawn(
      p.pool,
      [&]() -> asio::awaitable<void> {
        auto h = co_await p.client.make_lock("busy").acquire(asio::use_awaitable);
        holding.set_value();
        burn_cpu(500ms);
        co_await h.release(asio::use_awaitable);
      },
      asio::use_future);
  holding.get_future().wait();
  auto const start = clock_type::now();
  auto pong = p.client.exec(ping(), asio::use_future);
  BOOST_TEST_REQUIRE((pong.wait_for(10s) == std::future_status::ready));
  auto const waited = clock_type::now() - start;
  BOOST_TEST((waited < 250ms), "the PING took " << std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()
                                                << " ms behind 500 ms of another caller's work");
  busy.get();
}

// 1,500 ms of work under a 900 ms lease lost the hold with zero renewals.
BOOST_FIXTURE_TEST_CASE(a_hold_survives_three_seconds_of_busy_continuation_under_a_one_second_lease, lock_env) {
  pool_client p{redis, [](redisync::config& cfg) { cfg.watchdog_lease = 1s; }};
  p.run([&]() -> asio::awaitable<void> {
    auto h = co_await p.client.make_lock("long").acquire(asio::use_awaitable);
    burn_cpu(3s);
    BOOST_TEST((h.status() == hold_status::held));
    BOOST_TEST(p.client.metrics().renewed_holds >= 3u);
    auto [ec] = co_await h.release(tuple_awaitable);
    BOOST_TEST(!ec, ec.message());
  }());
}

// A service that runs one thread and blocks it: the client's own thread renews meanwhile, and the
// application's code still runs on the application's thread.
BOOST_FIXTURE_TEST_CASE(with_its_own_thread_a_client_keeps_a_hold_while_the_only_application_thread_blocks, lock_env) {
  asio::io_context ctx;
  auto cfg = redisync::test::fast_config(redis);
  cfg.watchdog_lease = 1s;
  cfg.own_thread = true;
  redisync::client c{ctx, cfg};
  c.start();
  auto const application_thread = std::this_thread::get_id();
  bool done = false;
  asio::co_spawn(
      ctx,
      [&]() -> asio::awaitable<void> {
        auto h = co_await c.make_lock("blocked").acquire(asio::use_awaitable);
        BOOST_TEST((std::this_thread::get_id() == application_thread));
        std::this_thread::sleep_for(3s);  // the application's blocking call
        BOOST_TEST((h.status() == hold_status::held));
        auto [ec] = co_await h.release(tuple_awaitable);
        BOOST_TEST(!ec, ec.message());
        BOOST_TEST((std::this_thread::get_id() == application_thread));
        // A handler that names no executor completes on the client's.
        redisync::test::event pinged{ctx.get_executor()};
        c.exec(ping(), [&](error_code, redisync::response) {
          BOOST_TEST((std::this_thread::get_id() == application_thread));
          pinged.notify();
        });
        BOOST_TEST(co_await pinged.wait(10s));
        co_await c.shutdown(5s, asio::use_awaitable);
        done = true;
      },
      asio::detached);
  ctx.run_for(60s);
  BOOST_TEST(done);
}

BOOST_FIXTURE_TEST_CASE(a_loss_wait_composed_with_work_cancels_the_work_when_the_hold_is_lost, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto h = co_await c.make_lock("composed").acquire(asio::use_awaitable);
    bool work_cancelled = false;
    auto work = [&]() -> asio::awaitable<void> {
      asio::steady_timer t{ctx, 30s};
      auto [ec] = co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
      work_cancelled = ec == asio::error::operation_aborted;
    };
    redis.command({"DEL", "composed"});  // the next renewal finds the lock gone
    auto const first = co_await (work() || h.wait_lost(asio::use_awaitable));
    BOOST_TEST_REQUIRE(first.index() == 1u);
    BOOST_TEST((std::get<1>(first) == hold_status::lost));
    BOOST_TEST(work_cancelled);
  }, [](redisync::config& cfg) { cfg.watchdog_lease = 600ms; });
}

BOOST_FIXTURE_TEST_CASE(a_loss_wait_completes_without_an_error_when_the_hold_is_released, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto lock = c.make_lock("released");
    auto h = co_await lock.acquire(asio::use_awaitable);
    auto release_soon = [&]() -> asio::awaitable<void> { co_await lock.release(asio::use_awaitable); };
    asio::co_spawn(ctx, release_soon(), asio::detached);
    auto [ec, how] = co_await h.wait_lost(tuple_awaitable);
    BOOST_TEST(!ec, ec.message());
    BOOST_TEST((how == hold_status::released));
    // A wait that starts after the end completes at once, saying how the hold ended.
    auto [late, late_how] = co_await h.wait_lost(tuple_awaitable);
    BOOST_TEST((!late && late_how == hold_status::released));
  });
}

BOOST_FIXTURE_TEST_CASE(operations_on_a_client_that_was_never_started_fail_at_once_with_not_started, lock_env) {
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    redisync::client c{ctx, redis.url()};  // start() forgotten
    auto const start = clock_type::now();
    auto [ec, h] = co_await c.make_lock("x").acquire(tuple_awaitable);
    BOOST_TEST((ec == error::not_started), ec.message());
    auto [tec, maybe] = co_await c.make_lock("x").try_acquire(2s, tuple_awaitable);
    BOOST_TEST((tec == error::not_started), tec.message());
    auto [eec, replies] = co_await c.exec(ping(), tuple_awaitable);
    BOOST_TEST((eec == error::not_started), eec.message());
    auto [qec, n] = co_await c.query<int>(ping(), tuple_awaitable);
    BOOST_TEST((qec == error::not_started), qec.message());
    BOOST_TEST((clock_type::now() - start < 2s));
    BOOST_TEST(ec.message().find("start()") != std::string::npos);
  });
}

// The first line everyone writes: GCC 12 destroyed the braced write twice (a double free).
BOOST_FIXTURE_TEST_CASE(a_fenced_write_braced_inline_in_a_co_await_is_safe, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto h = co_await c.make_lock("{order:7}").acquire(asio::use_awaitable);
    std::string const long_value(64, 'v');  // on the heap: a double free would show
    bool const written = co_await c.fenced_set({.fence_key = std::string{"{order:7}:fence-key-on-the-heap-too"},
                                                .key = std::string{"{order:7}:state-key-on-the-heap-as-well"},
                                                .value = long_value + "-paid",
                                                .token = h.token()},
                                               asio::use_awaitable);
    BOOST_TEST(written);
    BOOST_TEST(redis.command({"GET", "{order:7}:state-key-on-the-heap-as-well"}).text() == long_value + "-paid");
    co_await h.release(asio::use_awaitable);
  });
}

BOOST_AUTO_TEST_SUITE_END()
