#pragma once

// Runs a body holding `k` leased permits: with_lock (with_lock.hpp) for a semaphore. The body is
// cancelled when the permits are lost, the permits are always given back, and the completion is
// with_lock's (error::timeout when a bounded wait ran out).

#include <redisync/permits.hpp>
#include <redisync/with_lock.hpp>

namespace redisync {

namespace detail {

inline boost::asio::awaitable<held> acquire_permits_for_body(permits& p, std::int64_t k, lock_options const& o) {
  namespace asio = boost::asio;
  if (o.wait) {
    std::optional<held> got;
    if (o.lease) {
      got = co_await p.try_acquire(k, *o.wait, *o.lease, asio::use_awaitable);
    } else {
      got = co_await p.try_acquire(k, *o.wait, asio::use_awaitable);
    }
    if (!got) throw_error(error::timeout);
    co_return std::move(*got);
  }
  if (o.lease) co_return co_await p.acquire(k, *o.lease, asio::use_awaitable);
  co_return co_await p.acquire(k, asio::use_awaitable);
}

}  // namespace detail

template <class Body, class Token = boost::asio::use_awaitable_t<>>
auto with_permit(permits p, std::int64_t k, lock_options options, Body body, Token&& token = {}) {
  if constexpr (detail::check_body<Body>()) {
    return boost::asio::async_initiate<Token, detail::with_lock_signature<Body>>(
        [](auto handler, permits p, std::int64_t k, lock_options options, Body body) {
          auto ex = boost::asio::get_associated_executor(handler, p.get_executor());
          auto acquire = [p = std::move(p), k, options]() mutable {
            return detail::acquire_permits_for_body(p, k, options);
          };
          boost::asio::co_spawn(ex, detail::run_with_hold(std::move(acquire), std::move(body)), std::move(handler));
        },
        token, std::move(p), k, options, std::move(body));
  }
}

// Runs `body` holding `k` permits with the watchdog's lease, waiting as long as it takes.
template <class Body, class Token = boost::asio::use_awaitable_t<>>
  requires(!std::same_as<std::remove_cvref_t<Body>, lock_options>)
auto with_permit(permits p, std::int64_t k, Body body, Token&& token = {}) {
  return with_permit(std::move(p), k, lock_options{}, std::move(body), std::forward<Token>(token));
}

}  // namespace redisync
