#pragma once

// Runs a body under a lock: acquires, runs the body, always releases, and cancels the body if the
// lease is lost (the body sees operation_aborted, with_lock then throws error::lease_lost).

#include <redisync/lock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <exception>
#include <optional>
#include <type_traits>

namespace redisync {

// `body` is called as body(held&) and returns asio::awaitable<T>; with_lock returns its result.
template <class Body>
auto with_lock(lock& l, Body body)
    -> std::invoke_result_t<Body, held&> {
  using result_type = typename std::invoke_result_t<Body, held&>::value_type;
  namespace asio = boost::asio;
  auto ex = co_await asio::this_coro::executor;
  held h = co_await l.acquire(asio::use_awaitable);
  std::exception_ptr failure;
  std::conditional_t<std::is_void_v<result_type>, int, std::optional<result_type>> result{};
  try {
    if constexpr (std::is_void_v<result_type>) {
      co_await asio::co_spawn(ex, body(h), asio::bind_cancellation_slot(h.loss_slot(ex), asio::use_awaitable));
    } else {
      result = co_await asio::co_spawn(ex, body(h),
                                       asio::bind_cancellation_slot(h.loss_slot(ex), asio::use_awaitable));
    }
  } catch (...) {
    failure = std::current_exception();
  }
  bool const lost = h.status() == hold_status::lost;
  if (h.is_held()) {
    auto [ec] = co_await h.release(asio::as_tuple(asio::use_awaitable));
    if (ec && !failure) failure = std::make_exception_ptr(boost::system::system_error{ec});
  }
  if (lost) throw boost::system::system_error{make_error_code(error::lease_lost)};
  if (failure) std::rethrow_exception(failure);
  if constexpr (!std::is_void_v<result_type>) co_return std::move(*result);
}

}  // namespace redisync
