#pragma once

// Waiting for a Redisson RCountDownLatch to open (latch_calls.lua): the core's acquire loop with
// nothing held. A message '0' wakes every waiter of this client at once; without one, the first
// waiter looks again every second, and once it finds the latch open it wakes the others.

#include "sync/look_op.hpp"

#include <boost/asio/any_completion_handler.hpp>

namespace redisync::detail::latch_protocol {

using wait_signature = void(io::error_code, bool);

std::string channel_of(std::string_view name);

struct wait_args {
  std::string name;
  std::chrono::milliseconds bound{};
};

void start_wait(std::shared_ptr<sync::client_core> core, wait_args a,
                boost::asio::any_completion_handler<wait_signature> h);

class latch_wait final : public sync::look_op {
 public:
  latch_wait(std::shared_ptr<sync::client_core> core, wait_args a, pending_handler<wait_signature> handler);

 private:
  io::error_code check_arguments() const override;
  script const& attempt_script() const override;
  sync::message_policy policy() const override;
  io::outgoing attempt(bool retry, bool by_digest) override;
  outcome read(io::error_code ec, io::response& replies) override;
  void complete(io::error_code ec, bool open) override;

  std::chrono::milliseconds bound_;
  pending_handler<wait_signature> handler_;
};

}  // namespace redisync::detail::latch_protocol
