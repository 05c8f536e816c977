// expect: the body must return boost::asio::awaitable<T>
#include <redisync/redisync.hpp>

boost::asio::awaitable<void> f(redisync::lock l) {
  co_await redisync::with_lock(l, [](redisync::held&) { return 1; });
}
