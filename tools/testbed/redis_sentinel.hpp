#pragma once

// A master, its replica and three Sentinels monitoring them as "mymaster", private processes on
// loopback for tests of the sentinel client. The sentinels are redis-servers in --sentinel mode,
// each with a config file of its own that it rewrites. Roles are asked from the sentinels every
// time: a failover swaps them. Every process is stopped by its PID when the set goes away.

#include "testbed/redis_server.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace redisync::process {

struct sentinel_options {
  std::chrono::milliseconds down_after{2000};         // sentinel down-after-milliseconds
  std::chrono::milliseconds failover_timeout{10000};  // sentinel failover-timeout
  std::string sentinel_password;  // requirepass of the sentinels; empty: none
  std::string data_password;      // requirepass and masterauth of the master and the replica
  // With certificates, every process serves TLS on a port of its own as well (tls_url), and the
  // replica, the sentinels and the addresses they report use the TLS ports; the fixture keeps to
  // the plain ones.
  std::optional<tls_files> tls;
  // Bound of each step of the start-up: a process answering, the sentinels seeing it all.
  std::chrono::milliseconds start_timeout{30000};
};

class redis_sentinel_set {
 public:
  explicit redis_sentinel_set(sentinel_options options = {});

  // The data node the sentinels report as master, and the other one. Right after failover() the
  // old master is still a master by its own ROLE: the sentinels turn it into a replica some 10 s
  // later.
  redis_server& master();
  redis_server& replica();

  std::vector<std::uint16_t> sentinel_ports() const;
  std::string master_name() const;  // "mymaster"
  std::string url() const;          // redis-sentinel://127.0.0.1:S1,127.0.0.1:S2,127.0.0.1:S3/mymaster
  // rediss-sentinel://127.0.0.1:T1,127.0.0.1:T2,127.0.0.1:T3/mymaster to the sentinels' TLS ports,
  // with `query` if not empty.
  std::string tls_url(std::string const& query = {}) const;

  // SENTINEL FAILOVER on the first sentinel; returns once every sentinel reports the new master and
  // its ROLE is master.
  void failover();
  // From the first sentinel that answers GET-MASTER-ADDR-BY-NAME (a TLS port, with TLS).
  std::uint16_t current_master_port() const;

  // A promotion the sentinels did not make, step by step: the replica becomes a master of its own
  // (REPLICAOF NO ONE) while the sentinels still name the old master, which goes on taking writes
  // that the promoted one never sees; then name_master() makes every sentinel name it, as a
  // failover would that the old master did not hear of in time.
  redis_server& promote_without_sentinels();
  void name_master(redis_server& node);

 private:
  // The data node with this plain or TLS port.
  redis_server& data_node(std::uint16_t port);
  std::string unmet_ready(std::uint16_t master_port) const;

  sentinel_options options_;
  std::vector<std::unique_ptr<redis_server>> data_nodes_;
  // With TLS: the data nodes' TLS ports (by index), then the sentinels'.
  std::vector<std::uint16_t> data_tls_ports_;
  std::vector<std::uint16_t> sentinel_tls_ports_;
  // Declared last, so stopped first: no failover while the data nodes go away.
  std::vector<std::unique_ptr<redis_server>> sentinels_;
};

}  // namespace redisync::process
