#pragma once

// Where commands and subscriptions go. Everything above the router names a slot (of a key), never
// a connection: standalone Redis is the implementation here, Sentinel (the current master) and
// Cluster (a slot map, MOVED and ASK) are others. All of it runs on the client's strand.

#include <redisync/config.hpp>

#include "io/connection.hpp"
#include "io/connection_group.hpp"

#include <boost/asio/any_completion_handler.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace redisync::detail::routing {

using slot_type = std::uint32_t;  // a cluster hash slot; 0 on a single server
using node_id = std::uint32_t;    // which node, for state kept per node (loaded scripts)

struct router_events {
  std::function<void(resp::value const&)> push;  // a pub/sub message from any node
  std::function<void(node_id)> connected;        // a node's handshake completed (first and later)
  // A connection event of any node; `detail` names its address.
  std::function<void(event_kind, event_level, io::error_code, std::string_view detail)> event;
  // Another node became the master of some slots (a failover, a migration): what the former
  // master acknowledged may not be on the new one.
  std::function<void()> master_changed;
};

class router {
 public:
  virtual ~router() = default;

  // The group of the connections: the strand the client's state lives on (executor()) and the
  // executor under it (for timers), writes held to go out together, arrivals, completions.
  virtual io::connection_group& group() const noexcept = 0;

  virtual slot_type slot_of(std::string_view key) const noexcept = 0;
  virtual node_id node_of(slot_type slot) const noexcept = 0;
  // A slot that `node` serves, to address a command to that node (0 if it serves none).
  virtual slot_type a_slot_of(node_id node) const noexcept = 0;
  // Whether the node of `slot` has a connection that takes requests now.
  virtual bool connected(slot_type slot) const noexcept = 0;

  virtual void exec(slot_type slot, io::outgoing out, io::late_reply_handler late,
                    boost::asio::any_completion_handler<void(io::error_code, io::response)> handler) = 0;
  // Channels of one slot: pub/sub of a lock goes where its keys are.
  virtual void subscribe(bool on, slot_type slot, std::vector<std::string> channels,
                         boost::asio::any_completion_handler<void(io::error_code)> handler) = 0;

  virtual void run(boost::asio::any_completion_handler<void(io::error_code)> handler) = 0;
  virtual void stop() = 0;
  // Connection counters, summed over nodes.
  virtual io::connection_stats stats() const noexcept = 0;
  // Why the last attempt to connect to a node failed, if the node is still without a connection.
  virtual std::string last_failure() const = 0;
  // "host:port" of the node of `slot`, as far as known now. Any thread.
  virtual std::string address_of(slot_type slot) const = 0;
};

}  // namespace redisync::detail::routing
