#pragma once

// Runs a coroutine test body on its own io_context, fails the test if it does not finish in time,
// and then checks that the body left no work behind (every connection stopped, every timer done).

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <exception>
#include <functional>

namespace redisync::test {

namespace asio = boost::asio;
using namespace std::chrono_literals;

inline void run_async(std::function<asio::awaitable<void>(asio::io_context&)> body,
                      std::chrono::seconds limit = std::chrono::seconds{60}) {
  asio::io_context ctx;
  bool done = false;
  std::exception_ptr failure;
  asio::co_spawn(ctx, body(ctx), [&](std::exception_ptr e) {
    done = true;
    failure = e;
  });
  auto const deadline = std::chrono::steady_clock::now() + limit;
  while (!done && std::chrono::steady_clock::now() < deadline && !ctx.stopped()) {
    ctx.run_one_for(std::chrono::milliseconds{100});
  }
  BOOST_TEST_REQUIRE(done, "the test body did not finish within " << limit.count() << " s");
  if (failure) std::rethrow_exception(failure);
  // Leftover work would keep a service's io_context alive after it stopped its clients.
  ctx.run_for(std::chrono::seconds{10});
  BOOST_TEST(ctx.stopped(), "work was left on the io_context after the test body finished");
}

// A one-shot event a coroutine can wait for with a time limit.
class event {
 public:
  explicit event(asio::any_io_executor ex) : timer_{std::move(ex)} {
    timer_.expires_at(asio::steady_timer::time_point::max());
  }
  void notify() {
    set_ = true;
    timer_.cancel();
  }
  void reset() { set_ = false; }
  bool is_set() const { return set_; }
  // True if notified before the limit.
  asio::awaitable<bool> wait(std::chrono::milliseconds limit) {
    auto const deadline = std::chrono::steady_clock::now() + limit;
    while (!set_ && std::chrono::steady_clock::now() < deadline) {
      timer_.expires_at(deadline);
      co_await timer_.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    timer_.expires_at(asio::steady_timer::time_point::max());
    co_return set_;
  }

 private:
  asio::steady_timer timer_;
  bool set_ = false;
};

inline asio::awaitable<void> sleep_for(std::chrono::milliseconds d) {
  asio::steady_timer t{co_await asio::this_coro::executor, d};
  co_await t.async_wait(asio::use_awaitable);
}

// Waits for a state of the client or the server that has no event to await; fails the test if it
// does not hold within `limit`.
inline asio::awaitable<void> wait_until(std::function<bool()> condition, std::chrono::milliseconds limit) {
  auto const deadline = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    BOOST_TEST_REQUIRE((std::chrono::steady_clock::now() < deadline), "the condition did not hold in time");
    co_await sleep_for(std::chrono::milliseconds{5});
  }
}

}  // namespace redisync::test
