#pragma once

// Runs a body holding every member of a multi-lock: with_lock (with_lock.hpp) for several locks.
// The body is callable as body(multi_held&), body(multi_held const&) or body(); it is cancelled
// when any member is lost, every member is always released, and the completion is with_lock's
// (error::timeout when a bounded wait ran out, error::lease_lost when a member was lost).

#include <redisync/multi_lock.hpp>
#include <redisync/with_lock.hpp>

namespace redisync {

namespace detail {

inline boost::asio::awaitable<multi_held> acquire_locks_for_body(multi_lock& m, lock_options const& o) {
  namespace asio = boost::asio;
  if (o.wait) {
    std::optional<multi_held> got;
    if (o.lease) {
      got = co_await m.try_acquire(*o.wait, *o.lease, asio::use_awaitable);
    } else {
      got = co_await m.try_acquire(*o.wait, asio::use_awaitable);
    }
    if (!got) throw_error(error::timeout);
    co_return std::move(*got);
  }
  if (o.lease) co_return co_await m.acquire(*o.lease, asio::use_awaitable);
  co_return co_await m.acquire(asio::use_awaitable);
}

}  // namespace detail

template <class Body, class Token = boost::asio::use_awaitable_t<>>
auto with_locks(multi_lock m, lock_options options, Body body, Token&& token = {}) {
  if constexpr (detail::check_body<Body, multi_held>()) {
    return boost::asio::async_initiate<Token, detail::with_lock_signature<Body, multi_held>>(
        [](auto handler, multi_lock m, lock_options options, Body body) {
          auto ex = boost::asio::get_associated_executor(handler, m.get_executor());
          auto acquire = [m = std::move(m), options]() mutable { return detail::acquire_locks_for_body(m, options); };
          boost::asio::co_spawn(ex, detail::run_with_hold(std::move(acquire), std::move(body)), std::move(handler));
        },
        token, std::move(m), options, std::move(body));
  }
}

// Runs `body` holding every member with the watchdog's lease, waiting as long as it takes.
template <class Body, class Token = boost::asio::use_awaitable_t<>>
  requires(!std::same_as<std::remove_cvref_t<Body>, lock_options>)
auto with_locks(multi_lock m, Body body, Token&& token = {}) {
  return with_locks(std::move(m), lock_options{}, std::move(body), std::forward<Token>(token));
}

}  // namespace redisync
