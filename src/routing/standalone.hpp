#pragma once

// One Redis server: every slot is slot 0 on node 0, served by one connection (to a fixed address,
// or to a Sentinel's current master: see sentinel.hpp).

#include "routing/router.hpp"

namespace redisync::detail::routing {

class standalone : public router {
 public:
  // `redirect`: see io::connection_events (a Sentinel's master answers READONLY once demoted).
  standalone(io::connection::executor_type ex, config cfg, router_events events, io::node_options node = {},
             std::function<bool(io::entry_ptr const&)> redirect = {});

  io::connection_group& group() const noexcept override { return conn_.group(); }
  slot_type slot_of(std::string_view) const noexcept override { return 0; }
  node_id node_of(slot_type) const noexcept override { return 0; }
  slot_type a_slot_of(node_id) const noexcept override { return 0; }
  bool connected(slot_type) const noexcept override { return conn_.is_ready(); }

  void exec(slot_type slot, io::outgoing out, io::late_reply_handler late,
            boost::asio::any_completion_handler<void(io::error_code, io::response)> handler) override;
  void subscribe(bool on, slot_type slot, std::vector<std::string> channels,
                 boost::asio::any_completion_handler<void(io::error_code)> handler) override;
  void run(boost::asio::any_completion_handler<void(io::error_code)> handler) override;
  void stop() override;
  io::connection_stats stats() const noexcept override { return conn_.stats(); }
  std::string last_failure() const override { return conn_.last_failure(); }
  std::string address_of(slot_type) const override { return conn_.address(); }

 protected:
  io::connection conn_;
};

}  // namespace redisync::detail::routing
