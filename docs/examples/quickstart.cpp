// The README's example: take a lock, nest it, write with the fencing token, release.
//   quickstart redis://127.0.0.1:6379
#include <redisync/redisync.hpp>

#include <boost/asio.hpp>
#include <iostream>

namespace asio = boost::asio;

asio::awaitable<void> reserve_stock(redisync::owner const& me) {
  auto again = co_await me.lock("orders:42").acquire(asio::use_awaitable);  // re-enters
  co_await again.release(asio::use_awaitable);
}

asio::awaitable<void> handle_order(redisync::client& redis) {
  redisync::owner me = redis.new_owner();           // one identity per logical task
  auto lock = me.lock("orders:42");                 // a handle: no I/O
  auto held = co_await lock.acquire(asio::use_awaitable);  // waits; the watchdog renews the lease
  co_await reserve_stock(me);
  std::cout << "fencing token " << held.token() << "\n";   // pass it to the protected resource
  co_await held.release(asio::use_awaitable);
  redis.stop();
}

int main(int argc, char** argv) {
  asio::io_context ctx;
  redisync::client redis{ctx.get_executor(), argc > 1 ? argv[1] : "redis://127.0.0.1:6379"};
  redis.start();
  asio::co_spawn(ctx, handle_order(redis), asio::detached);
  ctx.run();
}
