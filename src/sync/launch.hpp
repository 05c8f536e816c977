#pragma once

// The one place where operations hop onto the client's strand and where a caller's cancellation is
// forwarded there. `launch` runs a coroutine on the strand and completes the caller's handler with
// its result on the handler's own executor.

#include "io/pending_handler.hpp"

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/system_executor.hpp>
#include <boost/system/errc.hpp>
#include <boost/system/error_code.hpp>

#include <exception>
#include <functional>
#include <memory>
#include <tuple>

namespace redisync::detail::sync {

// A caller's cancellation, forwarded to the strand: `on_cancel` runs there for each emission.
template <class Signature>
bool forward_cancellation(pending_handler<Signature>& handler, boost::asio::any_io_executor const& strand,
                          std::function<void(boost::asio::cancellation_type)> on_cancel) {
  auto slot = handler.cancellation_slot();
  if (!slot.is_connected()) return false;
  slot.assign([on_cancel = std::move(on_cancel), strand](boost::asio::cancellation_type type) {
    boost::asio::post(strand, [on_cancel, type] { on_cancel(type); });
  });
  return true;
}

// Runs `op` on `strand` and completes `handler` with its result. With `cancellable`, the handler's
// cancellation reaches the coroutine (through the strand).
template <class... R>
void launch(boost::asio::any_io_executor const& strand, completion_homes const& homes,
            boost::asio::awaitable<std::tuple<boost::system::error_code, R...>> op,
            boost::asio::any_completion_handler<void(boost::system::error_code, R...)> h, bool cancellable) {
  namespace asio = boost::asio;
  using result = std::tuple<boost::system::error_code, R...>;
  pending_handler<void(boost::system::error_code, R...)> handler{std::move(h), homes};
  std::shared_ptr<asio::cancellation_signal> signal;
  if (cancellable) {
    auto forwarded = std::make_shared<asio::cancellation_signal>();
    auto emit = [forwarded](asio::cancellation_type type) { forwarded->emit(type); };
    if (forward_cancellation(handler, strand, emit)) signal = std::move(forwarded);
  }
  auto done = [handler = std::move(handler), signal](std::exception_ptr e, result r) mutable {
    if (e) std::get<0>(r) = make_error_code(boost::system::errc::state_not_recoverable);
    std::apply([&](auto&&... a) { handler.complete(std::move(a)...); }, std::move(r));
  };
  if (!signal) {
    asio::co_spawn(strand, std::move(op), std::move(done));
    return;
  }
  auto slot = signal->slot();
  asio::co_spawn(strand, std::move(op), asio::bind_cancellation_slot(slot, std::move(done)));
}

// Completes `h` with `ec` and empty results, for an operation that has no client to run on (a
// handle or guard made by default or moved from): never from inside the initiating function, on
// the handler's own executor (with work kept there meanwhile), by way of the system executor.
template <class... R>
void fail_at_once(boost::asio::any_completion_handler<void(boost::system::error_code, R...)> h,
                  boost::system::error_code ec) {
  namespace asio = boost::asio;
  auto home = asio::prefer(asio::get_associated_executor(h), asio::execution::outstanding_work.tracked);
  asio::post(asio::system_executor{}, [h = std::move(h), ec, home = std::move(home)]() mutable {
    asio::dispatch(home, [h = std::move(h), ec]() mutable { std::move(h)(ec, R{}...); });
  });
}

}  // namespace redisync::detail::sync
