// expect: the body takes `held` by value
#include <redisync/redisync.hpp>

boost::asio::awaitable<void> f(redisync::lock l) {
  co_await redisync::with_lock(l, [](redisync::held) -> boost::asio::awaitable<void> { co_return; });
}
