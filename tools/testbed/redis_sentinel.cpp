#include "testbed/redis_sentinel.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <stdexcept>

namespace redisync::process {

namespace {

constexpr char const* name = "mymaster";
constexpr std::size_t sentinel_count = 3;
// A requested failover takes about a second: the limit is for a slow machine.
constexpr std::chrono::seconds transition_limit{30};

// The value of `key` in a reply of SENTINEL MASTER (RESP2: key, value, key, value...).
std::string entry(resp::value const& reply, std::string_view key) {
  auto const fields = reply.elements();
  for (std::size_t i = 0; i + 1 < fields.size(); i += 2) {
    if (fields[i].text() == key) return std::string{fields[i + 1].text()};
  }
  return {};
}

std::uint16_t reported_master_port(redis_server const& sentinel) {
  auto const reply = sentinel.command({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", name});
  std::int64_t port = 0;
  if (reply.elements().size() != 2 || !reply.elements()[1].as_integer(port)) {
    throw std::runtime_error{fmt::format("the sentinel on port {} answers GET-MASTER-ADDR-BY-NAME with {}",
                                         sentinel.port(), resp::debug_string(reply))};
  }
  return static_cast<std::uint16_t>(port);
}

// ROLE: ["master", ...] or ["slave", ip, port, link state, offset].
resp::value role(redis_server const& server) {
  auto reply = server.command({"ROLE"});
  if (reply.elements().empty()) {
    throw std::runtime_error{fmt::format("port {} answers ROLE with {}", server.port(), resp::debug_string(reply))};
  }
  return reply;
}

}  // namespace

redis_sentinel_set::redis_sentinel_set(sentinel_options options) : options_{options} {
  // The port a process is known by to the others: its TLS one, with TLS.
  auto with_tls = [&](redis_options& o, std::vector<std::uint16_t>& tls_ports) {
    if (!options.tls) return;
    tls_ports.push_back(free_loopback_port());
    auto const tls = tls_args(*options.tls, tls_ports.back());
    o.extra_args.insert(o.extra_args.end(), tls.begin(), tls.end());
  };
  redis_options master_options;
  master_options.password = options.data_password;
  master_options.start_timeout = options.start_timeout;
  // After a failover the old master replicates from the new one, which wants the same password.
  if (!options.data_password.empty()) master_options.extra_args = {"--masterauth", options.data_password};
  with_tls(master_options, data_tls_ports_);
  auto const& master = *data_nodes_.emplace_back(std::make_unique<redis_server>(master_options));
  auto const master_port = options.tls ? data_tls_ports_[0] : master.port();
  redis_options replica_options;
  replica_options.replica_of = master_port;
  replica_options.password = options.data_password;
  replica_options.start_timeout = options.start_timeout;
  with_tls(replica_options, data_tls_ports_);
  auto const& replica = *data_nodes_.emplace_back(std::make_unique<redis_server>(replica_options));
  // A sentinel learns of replicas from its master's INFO, asked at once and then every 10 s: the
  // replica must be there for the first.
  wait_until(fmt::format("the replica on port {} to connect to its master on port {}", replica.port(), master.port()),
             options.start_timeout, [&]() -> std::string {
               auto const reply = role(replica);
               if (reply.elements().size() >= 4 && reply.elements()[3].text() == "connected") return {};
               return fmt::format("its ROLE is {}", resp::debug_string(reply));
             });

  for (std::size_t i = 0; i < sentinel_count; ++i) {
    redis_options sentinel;
    sentinel.sentinel = true;
    sentinel.password = options.sentinel_password;
    sentinel.start_timeout = options.start_timeout;
    sentinel.config_file_lines = {
        fmt::format("sentinel monitor {} 127.0.0.1 {} 2", name, master_port),
        fmt::format("sentinel down-after-milliseconds {} {}", name, options.down_after.count()),
        fmt::format("sentinel failover-timeout {} {}", name, options.failover_timeout.count()),
        fmt::format("sentinel parallel-syncs {} 1", name),
        "sentinel resolve-hostnames no",
    };
    if (!options.data_password.empty()) {
      sentinel.config_file_lines.push_back(fmt::format("sentinel auth-pass {} {}", name, options.data_password));
    }
    with_tls(sentinel, sentinel_tls_ports_);
    sentinels_.push_back(std::make_unique<redis_server>(std::move(sentinel)));
  }
  // Sentinels find each other through hello messages on the master, sent every 2 s.
  wait_until("the sentinels to see the master, its replica and each other", options.start_timeout,
             [this, master_port] { return unmet_ready(master_port); });
}

std::string redis_sentinel_set::unmet_ready(std::uint16_t master_port) const {
  for (auto const& sentinel : sentinels_) {
    auto const reported = reported_master_port(*sentinel);
    if (reported != master_port) {
      return fmt::format("the sentinel on port {} reports master port {}", sentinel->port(), reported);
    }
    auto const master = sentinel->command({"SENTINEL", "MASTER", name});
    auto const replicas = entry(master, "num-slaves");
    auto const others = entry(master, "num-other-sentinels");
    if (replicas != "1" || others != std::to_string(sentinel_count - 1)) {
      return fmt::format("the sentinel on port {} sees num-slaves {} and num-other-sentinels {}", sentinel->port(),
                         replicas, others);
    }
  }
  return {};
}

redis_server& redis_sentinel_set::data_node(std::uint16_t port) {
  for (std::size_t i = 0; i < data_nodes_.size(); ++i) {
    if (data_nodes_[i]->port() == port || (i < data_tls_ports_.size() && data_tls_ports_[i] == port)) {
      return *data_nodes_[i];
    }
  }
  throw std::runtime_error{fmt::format("the sentinels report master port {}, not a port of the set", port)};
}

redis_server& redis_sentinel_set::master() { return data_node(current_master_port()); }

redis_server& redis_sentinel_set::promote_without_sentinels() {
  auto& promoted = replica();
  auto const reply = promoted.command({"REPLICAOF", "NO", "ONE"});
  if (reply.text() != "OK") {
    throw std::runtime_error{fmt::format("REPLICAOF NO ONE on port {}: {}", promoted.port(), resp::debug_string(reply))};
  }
  return promoted;
}

void redis_sentinel_set::name_master(redis_server& node) {
  std::size_t index = 0;
  while (data_nodes_[index].get() != &node) ++index;
  auto const port = options_.tls ? data_tls_ports_[index] : node.port();
  for (auto const& sentinel : sentinels_) {
    std::vector<std::vector<std::string>> const steps{
        {"SENTINEL", "REMOVE", name},
        {"SENTINEL", "MONITOR", name, "127.0.0.1", std::to_string(port), "2"},
        {"SENTINEL", "SET", name, "down-after-milliseconds", std::to_string(options_.down_after.count()),
         "failover-timeout", std::to_string(options_.failover_timeout.count())},
    };
    for (auto const& step : steps) {
      auto const reply = sentinel->command(step);
      if (reply.is_error()) {
        throw std::runtime_error{fmt::format("{} on the sentinel on port {}: {}", step[1], sentinel->port(),
                                             resp::debug_string(reply))};
      }
    }
    if (!options_.data_password.empty()) sentinel->command({"SENTINEL", "SET", name, "auth-pass", options_.data_password});
  }
  wait_until(fmt::format("the sentinels to name the master on port {}", port), transition_limit, [&]() -> std::string {
    for (auto const& sentinel : sentinels_) {
      if (auto const reported = reported_master_port(*sentinel); reported != port) {
        return fmt::format("the sentinel on port {} reports master port {}", sentinel->port(), reported);
      }
    }
    return {};
  });
}

redis_server& redis_sentinel_set::replica() {
  return *data_nodes_[&master() == data_nodes_[0].get() ? 1 : 0];
}

std::vector<std::uint16_t> redis_sentinel_set::sentinel_ports() const {
  std::vector<std::uint16_t> ports;
  for (auto const& sentinel : sentinels_) ports.push_back(sentinel->port());
  return ports;
}

std::string redis_sentinel_set::master_name() const { return name; }

std::string redis_sentinel_set::url() const {
  std::vector<std::string> addresses;
  for (auto const port : sentinel_ports()) addresses.push_back(fmt::format("127.0.0.1:{}", port));
  return fmt::format("redis-sentinel://{}/{}", fmt::join(addresses, ","), name);
}

std::string redis_sentinel_set::tls_url(std::string const& query) const {
  if (sentinel_tls_ports_.empty()) throw std::logic_error{"this Sentinel set serves no TLS (sentinel_options::tls)"};
  std::vector<std::string> addresses;
  for (auto const port : sentinel_tls_ports_) addresses.push_back(fmt::format("127.0.0.1:{}", port));
  return fmt::format("rediss-sentinel://{}/{}{}{}", fmt::join(addresses, ","), name, query.empty() ? "" : "?", query);
}

std::uint16_t redis_sentinel_set::current_master_port() const {
  std::vector<std::string> failures;
  for (auto const& sentinel : sentinels_) {
    try {
      return reported_master_port(*sentinel);
    } catch (std::exception const& e) {
      failures.emplace_back(e.what());
    }
  }
  throw std::runtime_error{fmt::format("no sentinel reports the master: {}", fmt::join(failures, "; "))};
}

void redis_sentinel_set::failover() {
  auto const old_port = current_master_port();
  auto const& asked = *sentinels_.front();
  // Right after a failover, the old master is no replica a Sentinel would promote yet (it is
  // reconfigured some 10 s later, and the Sentinels learn of its link from its INFO): NOGOODSLAVE
  // until then.
  wait_until(fmt::format("the sentinel on port {} to start a failover", asked.port()), transition_limit,
             [&]() -> std::string {
               auto const reply = asked.command({"SENTINEL", "FAILOVER", name});
               if (reply.text() == "OK") return {};
               if (reply.text().starts_with("NOGOODSLAVE") || reply.text().starts_with("INPROG")) {
                 return std::string{reply.text()};
               }
               throw std::runtime_error{fmt::format("SENTINEL FAILOVER {} on port {}: {}", name, asked.port(),
                                                    resp::debug_string(reply))};
             });
  wait_until(fmt::format("the sentinels to replace the master on port {}", old_port), transition_limit,
             [&]() -> std::string {
               std::uint16_t new_port = 0;
               for (auto const& sentinel : sentinels_) {
                 auto const reported = reported_master_port(*sentinel);
                 if (reported == old_port || (new_port != 0 && reported != new_port)) {
                   return fmt::format("the sentinel on port {} reports master port {}", sentinel->port(), reported);
                 }
                 new_port = reported;
               }
               auto const new_role = role(data_node(new_port));
               if (new_role.elements()[0].text() != "master") {
                 return fmt::format("the new master on port {} answers ROLE with {}", new_port,
                                    resp::debug_string(new_role));
               }
               return {};
             });
}

}  // namespace redisync::process
