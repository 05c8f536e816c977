#include <redisync/redisync.hpp>

#include <boost/asio.hpp>
#include <iostream>

namespace asio = boost::asio;

asio::awaitable<void> reserve_stock(redisync::owner const& me) {
  auto again = co_await me.lock("orders:42").acquire(asio::use_awaitable);  // re-enters
  co_await again.release(asio::use_awaitable);
}

asio::awaitable<void> handle_order(redisync::client& redis) {
  redisync::owner me = redis.new_owner();                  // one identity per logical task
  auto lock = me.lock("orders:42");                        // a handle: no I/O
  auto held = co_await lock.acquire(asio::use_awaitable);  // waits; the watchdog renews the lease
  co_await reserve_stock(me);
  // The write carries the fencing token: a holder whose lease ran out unnoticed cannot overwrite.
  redisync::fenced_write write{.fence_key = "{orders:42}:fence", .key = "{orders:42}:state",
                               .value = "reserved", .token = held.token()};
  bool const written = co_await redis.fenced_set(write, asio::use_awaitable);
  std::cout << "fencing token " << held.token() << (written ? ": written\n" : ": refused\n");
  co_await held.release(asio::use_awaitable);
  co_await redis.shutdown(std::chrono::seconds{5}, asio::use_awaitable);  // then ctx.run() returns
}

int main(int argc, char** argv) {
  asio::io_context ctx;
  redisync::client redis{ctx.get_executor(), argc > 1 ? argv[1] : "redis://127.0.0.1:6379"};
  redis.start();
  asio::co_spawn(ctx, handle_order(redis), [&](std::exception_ptr e) {
    if (!e) return;
    redis.stop();  // nothing more to do: ctx.run() returns, with the error
    std::rethrow_exception(e);
  });
  try {
    ctx.run();
  } catch (std::exception const& e) {
    std::cerr << "quickstart: " << e.what() << "\n";
    return 1;
  }
}
