#include "sync/own_thread.hpp"

namespace redisync::detail::sync {

own_thread::own_thread() {
  std::promise<void> ended;
  ended_ = ended.get_future();
  thread_ = std::thread{[state = state_, ended = std::move(ended)]() mutable {
    state->ctx.run();
    ended.set_value();
  }};
}

own_thread::~own_thread() {
  if (thread_.joinable() && thread_.get_id() == std::this_thread::get_id()) {
    state_->ctx.stop();
    thread_.detach();
    return;
  }
  finish(std::chrono::milliseconds{0});
}

void own_thread::finish(std::chrono::milliseconds limit) {
  if (!thread_.joinable() || thread_.get_id() == std::this_thread::get_id()) return;
  state_->work.reset();
  if (ended_.wait_for(limit) != std::future_status::ready) state_->ctx.stop();
  thread_.join();
}

}  // namespace redisync::detail::sync
