#include "sync/loss_wait.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include <algorithm>

namespace redisync::detail::sync {

namespace asio = boost::asio;
using io::error_code;

asio::awaitable<std::tuple<error_code, hold_status>> wait_lost(std::shared_ptr<client_core> core,
                                                               std::vector<std::shared_ptr<hold_state>> holds) {
  // A pure wait: any kind of cancellation ends it.
  co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
  auto const active = [](auto const& h) { return h->active(); };
  if (std::ranges::all_of(holds, active)) {
    // One timer for all: the first hold to end cancels it, and it leaves the others' lists here.
    asio::steady_timer timer{core->router().group().io_executor(), asio::steady_timer::time_point::max()};
    for (auto const& h : holds) h->loss_timers.push_back(&timer);
    co_await timer.async_wait(asio::as_tuple(asio::deferred));
    for (auto const& h : holds) std::erase(h->loss_timers, &timer);
  }
  auto const lost = [](auto const& h) { return h->status.load() == hold_status::lost; };
  if (std::ranges::any_of(holds, lost)) co_return std::tuple{error_code{}, hold_status::lost};
  auto const released = [](auto const& h) { return h->status.load() == hold_status::released; };
  if (std::ranges::any_of(holds, released)) co_return std::tuple{error_code{}, hold_status::released};
  co_return std::tuple{error_code{asio::error::operation_aborted}, holds.front()->status.load()};
}

}  // namespace redisync::detail::sync
