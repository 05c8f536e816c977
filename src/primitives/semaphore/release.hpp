#pragma once

// Giving permits of a Redisson RSemaphore back, on the shared release loop (sync::release_op): one
// `release` call with a trace (semaphore_calls.lua), so that a call whose outcome was lost is sent
// again without giving back twice, while the trace lasts. An owner gives back no more than it took
// through this client (error::not_owner); semaphore::add_permits adds permits without that check.

#include "primitives/semaphore/acquire.hpp"
#include "sync/release_op.hpp"

namespace redisync::detail::semaphore_protocol {

void start_release(std::shared_ptr<sync::client_core> core, std::string name, std::string owner, std::int64_t count,
                   boost::asio::any_completion_handler<void(io::error_code)> h);

class semaphore_release final : public sync::release_op {
 public:
  semaphore_release(std::shared_ptr<sync::client_core> core, std::string name, std::string owner, std::int64_t count,
                    pending_handler<void(io::error_code)> handler);
  void start();

 private:
  script const& release_script() const override;
  io::outgoing call(bool retry, bool by_digest) override;
  bool read(resp::value const& reply) override;
  bool may_repeat() const override;
  bool goes_on_in_background() const override { return false; }
  void succeeded() override;
  void complete(io::error_code ec) override;

  std::shared_ptr<sync::client_core> core_;
  std::int64_t count_;
  std::string key_;    // of the owner's count of permits taken (client_core::semaphores)
  std::string trace_;  // this client's trace key
  std::string id_;     // this release's id in it
  sync::clock_type::time_point first_sent_{};
  bool lost_ = false;  // a call's outcome was lost
  pending_handler<void(io::error_code)> handler_;
  sync::work_ticket in_progress_;
};

}  // namespace redisync::detail::semaphore_protocol
