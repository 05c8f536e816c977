// expect: the body must be callable as body(redisync::held&), body(redisync::held const&) or body()
#include <redisync/redisync.hpp>

boost::asio::awaitable<void> f(redisync::lock l) {
  co_await redisync::with_lock(l, [](int) -> boost::asio::awaitable<void> { co_return; });
}
