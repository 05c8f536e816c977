#pragma once

// A latch's wait started in the background, for the tests of the latch: when it ended, how, and
// an event to await its end.

#include <redisync/redisync.hpp>

#include "support/async_test.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <memory>

namespace redisync::test {

struct background_wait {
  explicit background_wait(boost::asio::any_io_executor ex) : done{std::move(ex)} {}
  boost::system::error_code error;
  bool open = false;
  std::chrono::steady_clock::time_point at{};  // when it ended
  event done;
};

inline std::shared_ptr<background_wait> wait_in_background(boost::asio::io_context& ctx, redisync::latch l,
                                                           std::chrono::milliseconds bound) {
  auto w = std::make_shared<background_wait>(ctx.get_executor());
  auto const ended = [w](std::exception_ptr, std::tuple<boost::system::error_code, bool> r) {
    w->at = std::chrono::steady_clock::now();
    w->error = std::get<0>(r);
    w->open = std::get<1>(r);
    w->done.notify();
  };
  boost::asio::co_spawn(ctx, l.wait(bound, boost::asio::as_tuple(boost::asio::use_awaitable)), ended);
  return w;
}

}  // namespace redisync::test
