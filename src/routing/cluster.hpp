#pragma once

// Redis Cluster: one connection per master, all on one strand; the slot map (routing/cluster_map,
// sans-io) from CLUSTER SHARDS, loaded at start and again after a MOVED, a reconnect or a node
// going down; MOVED, ASK and READONLY replies followed (io's redirect hook), TRYAGAIN and
// CLUSTERDOWN resent with backoff like LOADING (the multiplexer's transient retry); channels over
// sharded pub/sub on the node of their slot, moved when the slot moves.

#include "io/connection_group.hpp"
#include "routing/cluster_map.hpp"
#include "routing/router.hpp"

#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace redisync::detail::routing {

class cluster final : public router, public std::enable_shared_from_this<cluster> {
  struct private_tag {};

 public:
  static std::shared_ptr<cluster> create(io::connection::executor_type ex, config cfg, router_events events);
  cluster(private_tag, io::connection::executor_type ex, config cfg, router_events events);
  ~cluster() override;

  io::connection_group& group() const noexcept override { return *group_; }
  slot_type slot_of(std::string_view key) const noexcept override;
  node_id node_of(slot_type slot) const noexcept override { return map_.node_of(slot); }
  slot_type a_slot_of(node_id node) const noexcept override { return map_.a_slot_of(node); }
  bool connected(slot_type slot) const noexcept override;

  void exec(slot_type slot, io::outgoing out, io::late_reply_handler late,
            boost::asio::any_completion_handler<void(io::error_code, io::response)> handler) override;
  void subscribe(bool on, slot_type slot, std::vector<std::string> channels,
                 boost::asio::any_completion_handler<void(io::error_code)> handler) override;
  void run(boost::asio::any_completion_handler<void(io::error_code)> handler) override;
  void stop() override;
  io::connection_stats stats() const noexcept override;
  std::string last_failure() const override;

  std::string address_of(slot_type slot) const override;

 private:
  static constexpr node_id no_node = slot_map::no_node;
  // While the map is incomplete (a master down, no answer), it is loaded again this often.
  static constexpr std::chrono::milliseconds refresh_retry{250};

  struct node {
    node_address at;
    // Empty: not started (a replica, say, asked only when no master answers). A retired one is
    // replaced; the old one lives on while a load of the map may still use it.
    std::shared_ptr<io::connection> conn;
    bool master = false;  // serves slots in the current map
  };

  io::connection& conn_of(slot_type slot);
  void await_map(std::chrono::milliseconds wait, boost::asio::any_completion_handler<void(bool)> go);
  void settle_awaiting_map();
  void fail_unsent(boost::asio::any_completion_handler<void(io::error_code, io::response)> handler, error e);
  node_id find_or_add(node_address const& at);
  void start_node(node_id id);
  void route(io::entry_ptr e, node_id to, bool asking);
  void route_to_its_slot(io::entry_ptr e);  // where the map says its slot is now
  bool on_redirect(node_id from, io::entry_ptr const& e);
  void subscribe_on_owner(bool on, slot_type slot, std::vector<std::string> channels,
                          boost::asio::any_completion_handler<void(io::error_code)> handler, unsigned attempt);
  void want_refresh(std::chrono::milliseconds after);
  boost::asio::awaitable<void> refresh_loop();
  boost::asio::awaitable<std::optional<std::vector<shard>>> load_shards();
  void apply(std::vector<shard> const& shards);
  void reconcile_channels();
  void retire(node_id id);
  void set_map_failure(std::string text);
  void end_node_run(io::error_code ec);
  void finish_run(io::error_code ec);

  config cfg_;
  router_events events_;
  std::shared_ptr<io::connection_group> group_;
  // nodes_ and map_ change on the strand (under it); stats() and address_of() read them anywhere.
  mutable std::mutex nodes_mutex_;
  std::vector<std::unique_ptr<node>> nodes_;  // by node_id; an id stays with its address
  slot_map map_;
  node_id informed_ = no_node;  // named by the last MOVED: the one asked for the map
  unsigned informed_tries_ = 0;
  // Channels the layer above wants, by the node they are subscribed on.
  std::unordered_map<std::string, node_id> channels_;
  std::vector<io::entry_ptr> parked_;  // READONLY: resent once the map was loaded again
  std::vector<boost::asio::any_completion_handler<void()>> after_refresh_;  // subscriptions made again then
  struct awaiting {
    io::clock_type::time_point until;
    boost::asio::any_completion_handler<void(bool)> go;  // true: the map is known; false: it did not come in time
  };
  std::vector<awaiting> awaiting_map_;  // requests and subscriptions made before the first map
  boost::asio::steady_timer refresh_timer_;
  std::optional<io::clock_type::time_point> refresh_at_;
  bool refreshing_ = false;
  bool running_ = false;
  bool stopping_ = false;
  std::atomic<std::size_t> nodes_running_{0};
  std::string map_failure_;  // why the last load of the map failed (for last_failure; nodes_mutex_)
  io::error_code run_error_;
  std::optional<boost::asio::any_completion_handler<void(io::error_code)>> run_handler_;
};

}  // namespace redisync::detail::routing
