#pragma once

// A type-erased completion handler held by a pending operation. It keeps work on the handler's
// executor and completes there, as Asio's own operations do: never inside the operation's strand,
// so that the caller's code after the completion cannot hold up the connection, the watchdog or
// other callers. Only the library's own continuations, bound to the strand, run there inline.
// The handler's cancellation slot is left as it is, as Asio's own operations leave theirs: the
// initiating side may emit on it from any thread until it sees the completion, so clearing it here
// would free the slot's handler while another thread runs it. Every handler the library installs
// in a caller's slot only posts to the strand and keeps what it touches alive, so an emission after
// the completion does nothing. Callers never complete from inside an initiating function:
// initiations post to the strand first.

#include "io/delivery.hpp"

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/recycling_allocator.hpp>

#include <memory>
#include <optional>
#include <utility>

namespace redisync::detail {

// Where the handlers of an operation complete. `own` is the operation's strand: a handler bound
// to it (the library's own continuations) runs there inline. Any other leaves the strand through
// `delivery` (io/delivery.hpp). `fallback` is the executor of a handler that names none: the
// client's executor for the application's handlers, the strand for the library's own. Each
// conversion of an executor to any_completion_executor allocates, so their owner converts them
// once.
struct completion_homes {
  boost::asio::any_completion_executor own;
  boost::asio::any_completion_executor fallback;
  std::shared_ptr<io::delivery> delivery;
  // `fallback` is the executor under the strand itself (the client runs on the application's
  // executor): its handlers run where the delivery runs them, and need no work tracking while
  // the client keeps that executor busy.
  bool fallback_is_outside = false;
};

template <class Signature>
class pending_handler;

template <class... Args>
class pending_handler<void(Args...)> {
 public:
  using handler_type = boost::asio::any_completion_handler<void(Args...)>;

  pending_handler() = default;

  // A handler bound to the strand (the library's own coroutines) needs no work tracking, which
  // would allocate.
  pending_handler(handler_type handler, completion_homes const& homes)
      : work_{boost::asio::get_associated_executor(handler, homes.fallback)},
        handler_{std::move(handler)} {
    if (*work_ == homes.own) return;
    delivery_ = homes.delivery;
    if (homes.fallback_is_outside && *work_ == homes.fallback) {
      work_.reset();
      return;
    }
    work_ = boost::asio::prefer(*work_, boost::asio::execution::outstanding_work.tracked);
  }

  pending_handler(pending_handler&&) noexcept = default;
  // Asio 1.26's any_completion_handler move assignment wraps the source in a new handler and
  // recurses without end; swapping avoids it.
  pending_handler& operator=(pending_handler&& other) noexcept {
    work_ = std::move(other.work_);
    other.work_.reset();
    delivery_ = std::move(other.delivery_);
    handler_ = nullptr;
    handler_.swap(other.handler_);
    return *this;
  }

  explicit operator bool() const noexcept { return static_cast<bool>(handler_); }

  boost::asio::cancellation_slot cancellation_slot() const noexcept {
    return handler_ ? handler_.get_cancellation_slot() : boost::asio::cancellation_slot{};
  }

  // Completes once; later calls do nothing.
  void complete(Args... args) {
    if (!handler_) return;
    auto call = [h = std::move(handler_), ... a = std::move(args)]() mutable { std::move(h)(std::move(a)...); };
    auto ex = std::exchange(work_, std::nullopt);
    if (!delivery_) return boost::asio::dispatch(*ex, std::move(call));
    auto leave = [ex = std::move(ex), call = std::move(call)]() mutable {
      if (ex) return boost::asio::dispatch(*ex, std::move(call));
      call();
    };
    std::exchange(delivery_, nullptr)->add(
        io::delivery::call{boost::asio::bind_allocator(boost::asio::recycling_allocator<void>{}, std::move(leave))});
  }

 private:
  // The handler's executor, with work tracked unless it is the strand; empty when the handler
  // runs where the delivery runs it.
  std::optional<boost::asio::any_completion_executor> work_;
  std::shared_ptr<io::delivery> delivery_;  // empty: the handler runs on the strand
  handler_type handler_;
};

}  // namespace redisync::detail
