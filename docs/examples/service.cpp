// "Running in a service" (docs/guide.md) as a program: a service on a pool of four threads takes
// bookings under locks, computes between its awaits, stops work that loses its lock, and shuts down
// gracefully on SIGTERM, which it sends itself once its work is done. A test runs it.
//   service [redis://127.0.0.1:6379] [--own-thread]
#include <redisync/redisync.hpp>

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

#include <atomic>
#include <csignal>
#include <iostream>
#include <string_view>

namespace asio = boost::asio;
using asio::use_awaitable;
using namespace asio::experimental::awaitable_operators;
using namespace std::chrono_literals;

// The service's own work between two awaits: CPU time the client does not wait for.
std::uint64_t price_of(int booking) {
  std::uint64_t h = static_cast<std::uint64_t>(booking);
  for (int i = 0; i < 2'000'000; ++i) h = h * 6364136223846793005u + 1442695040888963407u;
  return h % 1000;
}

asio::awaitable<void> keep_seat(int booking) {
  asio::steady_timer t{co_await asio::this_coro::executor, 20ms};
  co_await t.async_wait(use_awaitable);
  auto const line = "booking " + std::to_string(booking) + " priced at " + std::to_string(price_of(booking)) + "\n";
  std::cout << line << std::flush;
}

asio::awaitable<void> book(redisync::client& redis, int booking) {
  redisync::owner me = redis.new_owner();
  // Named before the co_await: GCC 12 miscompiles a capturing lambda inside its full-expression.
  auto body = [booking]() -> asio::awaitable<void> {
    co_await keep_seat(booking);  // its CPU work holds up neither the connection nor the watchdog
  };
  co_await redisync::with_lock(me.lock("seats:" + std::to_string(booking % 3)), body);
}

// A long job that must stop when its lock is gone: the loss wait composes with the work.
asio::awaitable<void> settle(redisync::client& redis) {
  redisync::held h = co_await redis.make_lock("settlement").acquire(use_awaitable);
  auto work = []() -> asio::awaitable<void> {
    for (int day = 1; day <= 3; ++day) co_await keep_seat(100 + day);
  };
  auto ended = co_await (work() || h.wait_lost(use_awaitable));
  std::cout << (ended.index() == 0 ? "settled\n" : "settlement stopped: the lock was lost\n") << std::flush;
  co_await h.release(use_awaitable);
}

int main(int argc, char** argv) {
  std::string_view const url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
  auto cfg = redisync::config::from_url(url);
  cfg.own_thread = argc > 2 && std::string_view{argv[2]} == "--own-thread";
  asio::thread_pool pool{4};
  redisync::client redis{pool.get_executor(), cfg};
  redis.start();

  // SIGTERM ends the service: every hold released, then the client stops and the pool runs dry.
  asio::signal_set signals{pool, SIGINT, SIGTERM};
  signals.async_wait([&](boost::system::error_code ec, int) {
    if (ec) return;
    redis.shutdown(5s, [](boost::system::error_code why) {
      std::cout << "shut down" << (why ? ": " + why.message() : std::string{}) << "\n";
    });
  });

  std::atomic<int> done = 0;
  constexpr int bookings = 12;
  auto finished = [&](std::exception_ptr e) {
    if (e) std::cerr << "a booking failed\n";
    if (++done == bookings + 1) std::raise(SIGTERM);  // the work is done: end as an operator would
  };
  for (int i = 1; i <= bookings; ++i) asio::co_spawn(asio::make_strand(pool), book(redis, i), finished);
  asio::co_spawn(asio::make_strand(pool), settle(redis), finished);
  pool.join();
  std::cout << done.load() << " of " << bookings + 1 << " done\n";
  return done == bookings + 1 ? 0 : 1;
}
