#pragma once

// A type-erased completion handler held by a pending operation. It keeps work on the handler's
// executor and completes by dispatching to that executor, where it first clears the cancellation
// slot (the slot belongs to the initiating side and must not be touched from the strand). Callers
// never complete from inside an initiating function: initiations post to the strand first.

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/prefer.hpp>

#include <optional>
#include <tuple>
#include <utility>

namespace redisync::detail {

template <class Signature>
class pending_handler;

template <class... Args>
class pending_handler<void(Args...)> {
 public:
  using handler_type = boost::asio::any_completion_handler<void(Args...)>;

  pending_handler() = default;

  // `home` is the operation's own strand, converted once by its owner: each conversion of an
  // executor to any_completion_executor allocates. A handler bound to the strand (the library's
  // own coroutines) or to no executor needs no work tracking, which would allocate as well.
  pending_handler(handler_type handler, boost::asio::any_completion_executor const& home)
      : work_{tracked(boost::asio::get_associated_executor(handler, home), home)},
        handler_{std::move(handler)} {}

  pending_handler(pending_handler&&) noexcept = default;
  // Asio 1.26's any_completion_handler move assignment wraps the source in a new handler and
  // recurses without end; swapping avoids it.
  pending_handler& operator=(pending_handler&& other) noexcept {
    work_ = std::move(other.work_);
    other.work_.reset();
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
    auto ex = std::move(*work_);
    work_.reset();
    boost::asio::dispatch(ex, [h = std::move(handler_), ... a = std::move(args)]() mutable {
      h.get_cancellation_slot().clear();
      std::move(h)(std::move(a)...);
    });
  }

 private:
  static boost::asio::any_completion_executor tracked(
      boost::asio::any_completion_executor ex, boost::asio::any_completion_executor const& home) {
    if (ex == home) return ex;
    return boost::asio::prefer(ex, boost::asio::execution::outstanding_work.tracked);
  }

  std::optional<boost::asio::any_completion_executor> work_;
  handler_type handler_;
};

}  // namespace redisync::detail
