#pragma once

// Runs a body under a lock: acquires, runs the body, always releases. The body is cancelled
// (terminal) when the hold is lost, and receives the caller's own cancellation of with_lock as
// it comes (terminal, partial or total); a body coroutine that wants partial or total cancellation
// enables it with this_coro::reset_cancellation_state, as for any operation. Completes like
// co_spawn: with the body's exception or result, or system_error(error::lease_lost) if the hold
// was lost, system_error(error::timeout) if a bounded wait ran out, or the acquire's error.

#include <redisync/lock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <chrono>
#include <concepts>
#include <exception>
#include <optional>
#include <type_traits>

namespace redisync {

// Every member has an initializer, so that `{.wait = 2s}` may leave the others out (GCC 12's
// -Wextra warns of an omitted member that has none).
struct lock_options {
  std::optional<std::chrono::milliseconds> lease{};  // a fixed lease without the watchdog
  std::optional<std::chrono::milliseconds> wait{};   // at most this long to acquire (error::timeout)
};

namespace detail {

template <class T>
struct is_awaitable : std::false_type {};
template <class T, class Executor>
struct is_awaitable<boost::asio::awaitable<T, Executor>> : std::true_type {};

// How a body is called: with the hold (as Hold& or Hold const&: a held, or a multi-lock's
// multi_held), or with nothing.
template <class Body, class Hold = held>
inline constexpr bool takes_hold = std::invocable<Body&, Hold&>;
template <class Body, class Hold = held>
inline constexpr bool takes_nothing = !takes_hold<Body, Hold> && std::invocable<Body&>;

template <class Body, class Hold>
auto call_body(Body& body, Hold& h) {
  if constexpr (takes_hold<Body, Hold>) {
    return body(h);
  } else {
    return body();
  }
}

template <class Body, class Hold = held>
using body_awaitable_t = decltype(call_body(std::declval<Body&>(), std::declval<Hold&>()));

// Checked in with_lock itself, so that a body of another shape fails there, in the caller's
// file, saying what is expected (and nothing else fails after it).
template <class Body, class Hold = held>
constexpr bool check_body() {
  if constexpr (!std::is_same_v<Hold, held> && !takes_hold<Body, Hold> && !takes_nothing<Body, Hold>) {
    static_assert(takes_hold<Body, Hold>,
                  "redisync::with_locks: the body must be callable as body(redisync::multi_held&), "
                  "body(redisync::multi_held const&) or body()");
    return false;
  } else if constexpr (!std::is_same_v<Hold, held>) {
    static_assert(is_awaitable<body_awaitable_t<Body, Hold>>::value,
                  "redisync::with_locks: the body must return boost::asio::awaitable<T> (or awaitable<void>)");
    return is_awaitable<body_awaitable_t<Body, Hold>>::value;
  } else if constexpr (std::invocable<Body&, held&&> && !takes_hold<Body>) {
    static_assert(takes_hold<Body>,
                  "redisync::with_lock: the body takes `held` by value; take `redisync::held&` or "
                  "`redisync::held const&` (the hold stays with with_lock, which releases it)");
    return false;
  } else if constexpr (!takes_hold<Body> && !takes_nothing<Body>) {
    static_assert(takes_hold<Body>,
                  "redisync::with_lock: the body must be callable as body(redisync::held&), "
                  "body(redisync::held const&) or body()");
    return false;
  } else if constexpr (!is_awaitable<body_awaitable_t<Body>>::value) {
    static_assert(is_awaitable<body_awaitable_t<Body>>::value,
                  "redisync::with_lock: the body must return boost::asio::awaitable<T> (or awaitable<void>): "
                  "make it a coroutine, `-> asio::awaitable<int> { co_return 1; }`");
    return false;
  } else {
    return true;
  }
}

template <class Body, class Hold = held>
using body_result_t = typename body_awaitable_t<Body, Hold>::value_type;

template <class Result>
struct with_lock_completion {
  using type = void(std::exception_ptr, Result);
};
template <>
struct with_lock_completion<void> {
  using type = void(std::exception_ptr);
};
template <class Body, class Hold = held>
using with_lock_signature = typename with_lock_completion<body_result_t<Body, Hold>>::type;

// When the body ends, the loss wait is cancelled; when the hold is lost, the body is. A loss wait
// that ends because the body released the hold cancels nothing.
struct end_body_on_loss {
  template <class... Result>
  boost::asio::cancellation_type operator()(std::exception_ptr const&, Result const&...) const {
    return boost::asio::cancellation_type::terminal;
  }
  boost::asio::cancellation_type operator()(boost::system::error_code const& ec, hold_status end) const {
    return !ec && end == hold_status::lost ? boost::asio::cancellation_type::terminal
                                           : boost::asio::cancellation_type::none;
  }
};

[[noreturn]] inline void throw_error(error e) { throw boost::system::system_error{make_error_code(e)}; }

inline boost::asio::awaitable<held> acquire_for_body(lock& l, lock_options const& o) {
  namespace asio = boost::asio;
  if (o.wait) {
    std::optional<held> got;
    if (o.lease) {
      got = co_await l.try_acquire(*o.wait, *o.lease, asio::use_awaitable);
    } else {
      got = co_await l.try_acquire(*o.wait, asio::use_awaitable);
    }
    if (!got) throw_error(error::timeout);
    co_return std::move(*got);
  }
  if (o.lease) co_return co_await l.acquire(*o.lease, asio::use_awaitable);
  co_return co_await l.acquire(asio::use_awaitable);
}

// Runs `body` under the hold that `acquire()` (an awaitable<held>, or of a multi_held) takes, then
// releases it.
template <class Acquire, class Body, class Hold = typename std::invoke_result_t<Acquire&>::value_type>
boost::asio::awaitable<body_result_t<Body, Hold>> run_with_hold(Acquire acquire, Body body) {
  namespace asio = boost::asio;
  using result_type = body_result_t<Body, Hold>;
  // Every kind of cancellation the caller sends goes on to the acquire and the body; after one,
  // the release still runs.
  co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
  co_await asio::this_coro::throw_if_cancelled(false);
  Hold h = co_await acquire();
  auto ex = co_await asio::this_coro::executor;
  std::exception_ptr failure;
  std::conditional_t<std::is_void_v<result_type>, int, std::optional<result_type>> result{};
  auto group = asio::experimental::make_parallel_group(asio::co_spawn(ex, call_body(body, h), asio::deferred),
                                                       h.wait_lost(asio::deferred));
  asio::cancellation_state const cancellation = co_await asio::this_coro::cancellation_state;
  if (cancellation.cancelled() != asio::cancellation_type::none) {
    // Cancelled as the acquire completed: the body does not start.
    failure = std::make_exception_ptr(boost::system::system_error{make_error_code(asio::error::operation_aborted)});
  } else if constexpr (std::is_void_v<result_type>) {
    auto [order, body_failure, loss, end] = co_await group.async_wait(end_body_on_loss{}, asio::deferred);
    failure = body_failure;
  } else {
    auto [order, body_failure, value, loss, end] = co_await group.async_wait(end_body_on_loss{}, asio::deferred);
    failure = body_failure;
    if (!failure) result.emplace(std::move(value));
  }
  bool const lost = h.status() == hold_status::lost;
  if (h.is_held()) {
    // Not cancellable by the caller: a release is bounded by the lease.
    auto [ec] = co_await h.release(asio::as_tuple(asio::bind_cancellation_slot(asio::cancellation_slot{}, asio::use_awaitable)));
    if (ec && !failure) failure = std::make_exception_ptr(boost::system::system_error{ec});
  }
  if (lost) throw_error(error::lease_lost);
  if (failure) std::rethrow_exception(failure);
  if constexpr (!std::is_void_v<result_type>) co_return std::move(*result);
}

}  // namespace detail

// Runs `body` under `l` with `options`. The body is callable as body(held&), body(held const&) or
// body(), and returns asio::awaitable<T> or asio::awaitable<void>; it runs on the completion
// handler's executor (the calling coroutine's, for use_awaitable), or the client's if the handler
// has none. The default token is use_awaitable, not deferred: Asio 1.26 cannot co_await a
// deferred operation that completes with an exception_ptr and a value.
template <class Body, class Token = boost::asio::use_awaitable_t<>>
auto with_lock(lock l, lock_options options, Body body, Token&& token = {}) {
  if constexpr (detail::check_body<Body>()) {
    return boost::asio::async_initiate<Token, detail::with_lock_signature<Body>>(
        [](auto handler, lock l, lock_options options, Body body) {
          auto ex = boost::asio::get_associated_executor(handler, l.get_executor());
          auto acquire = [l = std::move(l), options]() mutable { return detail::acquire_for_body(l, options); };
          boost::asio::co_spawn(ex, detail::run_with_hold(std::move(acquire), std::move(body)), std::move(handler));
        },
        token, std::move(l), options, std::move(body));
  }
}

// Runs `body` under `l`, held with the watchdog's lease, waiting as long as it takes.
template <class Body, class Token = boost::asio::use_awaitable_t<>>
  requires(!std::same_as<std::remove_cvref_t<Body>, lock_options>)
auto with_lock(lock l, Body body, Token&& token = {}) {
  return with_lock(std::move(l), lock_options{}, std::move(body), std::forward<Token>(token));
}

}  // namespace redisync
