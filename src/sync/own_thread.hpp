#pragma once

// A client's own thread and io_context (config::own_thread): its connection, watchdog and waiters
// run there, so that renewals and replies never wait behind the application's work, even in a
// service that runs one thread and computes between its awaits. The application's handlers still
// complete on their own executors.

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <future>
#include <memory>
#include <thread>

namespace redisync::detail::sync {

class own_thread {
 public:
  own_thread();
  ~own_thread();
  own_thread(own_thread const&) = delete;
  own_thread& operator=(own_thread const&) = delete;

  boost::asio::io_context::executor_type get_executor() noexcept { return state_->ctx.get_executor(); }

  // Lets the work that is left finish (after the client stopped, its connection closing and its
  // timers cancelled) for at most `limit`, then stops the io_context and joins the thread.
  void finish(std::chrono::milliseconds limit);

 private:
  // Shared with the thread, which may outlive this object: a client destroyed from a callback on
  // the thread itself cannot wait for it, and its io_context must not go while it runs.
  struct state {
    boost::asio::io_context ctx{1};
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{ctx.get_executor()};
  };
  std::shared_ptr<state> state_ = std::make_shared<state>();
  std::future<void> ended_;
  std::thread thread_;
};

}  // namespace redisync::detail::sync
