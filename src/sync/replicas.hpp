#pragma once

// config::wait_replicas: after a grant, WAIT on the node that wrote it (the connection that wrote
// it, so that its write is among those waited for). Every primitive's acquire goes behind it: too
// few acknowledgements give back what was granted and fail the acquire, so that a grant is never
// left behind an error.

#include "sync/client_core.hpp"
#include "sync/launch.hpp"

#include <redisync/held.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

namespace redisync::detail::sync {

// Success when the configuration asks for no replica, or enough acknowledged in time; else
// error::not_replicated (told as an event about `name`): the caller undoes the grant.
boost::asio::awaitable<io::error_code> confirm_replicas(client_core& core, routing::slot_type slot,
                                                        std::string_view name);

// The WAIT after a grant of `key`; on too few acknowledgements, `give_back(result...)` (an
// awaitable) undoes it and the caller gets error::not_replicated with empty results.
template <class GiveBack, class... R>
boost::asio::awaitable<std::tuple<io::error_code, R...>> confirm_grant(std::shared_ptr<client_core> core,
                                                                       std::string key, GiveBack give_back,
                                                                       R... result) {
  auto const ec = co_await confirm_replicas(*core, core->router().slot_of(key), key);
  if (!ec) co_return std::tuple{io::error_code{}, std::move(result)...};
  co_await give_back(result...);
  co_return std::tuple{ec, R{}...};
}

// The caller's handler, behind a WAIT when the configuration asks for one: a completion without
// error for which `granted(result...)` holds is confirmed first (see confirm_grant).
template <class Granted, class GiveBack, class... R>
boost::asio::any_completion_handler<void(io::error_code, R...)> replicated(
    std::shared_ptr<client_core> const& core, std::string key,
    boost::asio::any_completion_handler<void(io::error_code, R...)> h, Granted granted, GiveBack give_back) {
  namespace asio = boost::asio;
  if (core->cfg().wait_replicas == 0) return h;
  auto slot = h.get_cancellation_slot();
  auto ex = asio::get_associated_executor(h, core->application_executor());
  auto confirm = [core, key = std::move(key), granted = std::move(granted), give_back = std::move(give_back),
                  h = std::move(h)](io::error_code ec, R... result) mutable {
    if (ec || !granted(result...)) return std::move(h)(ec, std::move(result)...);
    launch(core->strand(), core->homes(), confirm_grant(core, std::move(key), std::move(give_back), std::move(result)...),
           std::move(h), false);
  };
  return asio::bind_executor(std::move(ex), asio::bind_cancellation_slot(slot, std::move(confirm)));
}

inline held* hold_in(held& h) { return &h; }
inline held* hold_in(std::optional<held>& h) { return h ? &*h : nullptr; }

inline boost::asio::awaitable<void> release_quietly(held* h) {
  co_await h->release(boost::asio::as_tuple(boost::asio::use_awaitable));
}

// For an acquire that answers a hold (held, or an optional one): given back by releasing it.
template <class Hold>
boost::asio::any_completion_handler<void(io::error_code, Hold)> replicated_hold(
    std::shared_ptr<client_core> const& core, std::string key,
    boost::asio::any_completion_handler<void(io::error_code, Hold)> h) {
  auto const granted = [](Hold& result) { return hold_in(result) != nullptr; };
  auto const give_back = [](Hold& result) { return release_quietly(hold_in(result)); };
  return replicated(core, std::move(key), std::move(h), granted, give_back);
}

}  // namespace redisync::detail::sync
