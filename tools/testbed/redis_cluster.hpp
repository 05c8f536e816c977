#pragma once

// A Redis Cluster of private redis-server nodes on loopback, for tests of the cluster client:
// created with `redis-cli --cluster create`, and able to fail over, lose a master, take it back
// and move a slot step by step. Roles and slot owners are asked from the running nodes every time,
// never assumed: a failover changes them. Every wait is bounded and its error names the node, its
// port and the state it was in. Nodes are stopped by their PIDs when the cluster goes away.

#include "testbed/redis_server.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace redisync::process {

struct cluster_options {
  std::size_t masters = 3;  // redis-cli creates no cluster of fewer
  std::size_t replicas_per_master = 1;
  std::chrono::milliseconds node_timeout{2000};
  std::vector<std::string> extra_args;  // for every node's command line
  // With certificates, every node serves TLS on a port of its own as well (tls_url), without asking
  // clients for certificates; its cluster bus and its replication speak TLS (so that CLUSTER SHARDS
  // reports the TLS ports, which replicas then use too); the fixture keeps to the plain ports.
  std::optional<tls_files> tls;
  // Bound of each step of the start-up: a node answering, the creation, the cluster being ok.
  std::chrono::milliseconds start_timeout{30000};
};

// How far migrate_slot() goes.
enum class migrate_step {
  slot_marked,  // IMPORTING on the target and MIGRATING on the source; no key moved yet
  keys_moved,   // every key of the slot moved; both nodes still mark the slot as moving
  done,         // every master serves the slot from the target
};

class redis_cluster {
 public:
  explicit redis_cluster(cluster_options options = {});

  std::vector<redis_server*> nodes();
  redis_server& node(std::size_t i);

  // Indexes of the running masters and replicas, from CLUSTER NODES of a running node.
  std::vector<std::size_t> masters() const;
  std::vector<std::size_t> replicas() const;
  // The node serving `slot`, from CLUSTER SLOTS of a running node.
  std::size_t master_of_slot(std::uint16_t slot) const;
  // A running replica of that master.
  std::size_t replica_of(std::size_t master_index) const;

  std::string url() const;   // redis-cluster://127.0.0.1:P1,127.0.0.1:P2 (two seed nodes)
  // rediss-cluster://127.0.0.1:T1,127.0.0.1:T2 to the TLS ports, with `query` if not empty.
  std::string tls_url(std::string const& query = {}) const;
  std::uint16_t tls_port(std::size_t i) const { return tls_ports_.at(i); }
  std::string seed() const;  // 127.0.0.1:P1

  // CLUSTER FAILOVER [FORCE] on the replica; returns once it is a master and the cluster is ok.
  void failover(std::size_t replica_index, bool force = false);
  // SIGKILL; returns once another node serves its slots and the cluster is ok.
  void kill_master(std::size_t master_index);
  // SIGSTOP: a master that neither dies nor answers; returns once another node serves its slots
  // and the cluster is ok without it. resume() lets it go on (SIGCONT): it runs what it had
  // queued, hears of the promotion and rejoins as a replica; it returns once the cluster is ok.
  void pause_master(std::size_t master_index);
  void resume(std::size_t i);
  // Starts a stopped node again on its port; returns once it rejoined (a replaced master comes back
  // as a replica) and the cluster is ok.
  void restart(std::size_t i);
  // Until every running node says cluster_state:ok and knows every node, their views of each
  // other's roles agree and no running node is flagged as failed, and every replica's link is up.
  void wait_ok();

  // Live resharding of one slot to the master `to_master`, up to `stop_at`; finish_migration()
  // completes a migration that stopped early (moving any key written to the source meanwhile).
  void migrate_slot(std::uint16_t slot, std::size_t to_master, migrate_step stop_at = migrate_step::done);
  void finish_migration(std::uint16_t slot);
  // Moves one key of a slot that migrate_slot() left marked, so that a slot's keys can be split
  // between its source and its target (a multi-key command meets TRYAGAIN then).
  void migrate_key(std::uint16_t slot, std::string const& key);
  // Moves the next key of a slot that migrate_slot() left marked; false when none is left.
  bool migrate_one_key(std::uint16_t slot);
  // `redis-cli --cluster reshard`: moves `slots` slots of one master to another, key by key, as an
  // operator would; returns once the cluster is ok.
  void reshard(std::size_t from_master, std::size_t to_master, int slots);

 private:
  struct slot_span {
    std::int64_t first = 0;
    std::int64_t last = 0;
  };
  std::size_t index_of(std::string_view node_id) const;
  bool answers(std::size_t i) const;  // running and not paused
  redis_server const& any_running() const;
  std::vector<slot_span> slots_of_master(std::size_t master_index) const;
  void wait_for_takeover(std::size_t master_index, std::vector<slot_span> const& lost) const;
  std::vector<std::size_t> running_with_role(std::string_view role) const;
  std::string describe(std::size_t i) const;  // "node 2 (port 40123)"
  std::string unmet_ok() const;
  void move_keys(std::uint16_t slot, std::size_t from, std::size_t to);
  void migrate(std::uint16_t slot, std::size_t from, std::size_t to, std::vector<std::string> const& keys);

  std::vector<std::unique_ptr<redis_server>> nodes_;
  std::vector<std::string> ids_;  // by index; a restarted node keeps its ID (its nodes-P.conf)
  std::vector<std::uint16_t> tls_ports_;  // by index, with cluster_options::tls
  std::map<std::uint16_t, std::pair<std::size_t, std::size_t>> migrations_;  // slot: from, to
  std::set<std::size_t> paused_;  // stopped with SIGSTOP: not asked
};

// The cluster slot of a key: CRC16-XMODEM of the key, or of its hash tag (the bytes between the
// first `{` and the next `}`, if there are any), modulo 16384.
std::uint16_t key_slot(std::string_view key);

}  // namespace redisync::process
