#pragma once

// A master found through Redis Sentinel, as the Sentinel client guidelines say: before each
// connect the Sentinels are asked in order, a short timeout each, for the master's address (the
// one that answers moves to the front, and the list learns the Sentinels it knows of); the
// handshake checks with ROLE that the server is a master; a READONLY reply (a demoted master) or
// a Sentinel's +switch-master message makes the connection start again, asking again.

#include "routing/standalone.hpp"

#include <memory>

namespace redisync::detail::routing {

class sentinel final : public standalone {
 public:
  sentinel(io::connection::executor_type ex, config cfg, router_events events);

  void run(boost::asio::any_completion_handler<void(io::error_code)> handler) override;
  void stop() override;
  std::string last_failure() const override;

 private:
  struct resolver;
  sentinel(io::connection::executor_type ex, config cfg, router_events events, std::shared_ptr<resolver> r);
  static io::connection_events switch_master_watch(std::shared_ptr<resolver> const& r);
  static router_events follow_master(router_events events, std::shared_ptr<resolver> const& r);

  std::shared_ptr<resolver> resolver_;
  // Subscribed to +switch-master on the first Sentinel: a hint to ask again at once.
  io::connection watch_;
};

}  // namespace redisync::detail::routing
