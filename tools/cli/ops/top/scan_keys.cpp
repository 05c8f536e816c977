#include "cli/ops/top/scan_keys.hpp"

#include <boost/asio/use_awaitable.hpp>
#include <fmt/core.h>

#include <stdexcept>
#include <string_view>

namespace redisync::cli {

namespace asio = boost::asio;

namespace {

// SCAN's COUNT: a hint of how many keys one step looks at. SCAN, never KEYS: a large keyspace is
// walked in steps without blocking the server.
constexpr int scan_step = 1000;

// Walks the keyspace of the node `c` talks to until the cursor is back at 0 or `names` holds
// max_keys, appending what it finds.
asio::awaitable<void> scan_node(client& c, key_scan const& scan, std::vector<std::string>& names) {
  std::string cursor = "0";
  do {
    resp::request req;
    req.push("SCAN", cursor, "MATCH", scan.match, "COUNT", scan_step, "TYPE", scan.type);
    auto const reply = co_await command(c, std::move(req));
    auto const parts = reply.elements();
    cursor = parts[0].text();
    for (auto const& key : parts[1].elements()) names.emplace_back(key.text());
  } while (cursor != "0" && std::ssize(names) < scan.max_keys);
}

// The masters that serve slots, read from CLUSTER SHARDS as the client's own slot map reads it
// (src/routing/cluster.cpp): the endpoint, or the ip where the endpoint is unknown ("?"), and the
// TLS port on a TLS cluster. A master it cannot place is an error, never a master left out.
asio::awaitable<std::vector<node_address>> cluster_masters(client& c) {
  resp::request req;
  req.push("CLUSTER", "SHARDS");
  auto const reply = co_await command(c, std::move(req));
  // An address without a host is the answering node's: a keyless command goes to the master of
  // slot 0, which is the empty name's slot.
  auto const asked = c.node_of("");
  std::string const asked_host = asked.substr(0, asked.rfind(':'));
  char const* const port_field = c.cfg().tls ? "tls-port" : "port";
  std::vector<node_address> masters;
  for (auto const& shard : reply.elements()) {
    auto const* slots = shard.field("slots");
    auto const* nodes = shard.field("nodes");
    if (slots == nullptr || slots->elements().empty() || nodes == nullptr) continue;  // serves no slot
    for (auto const& node : nodes->elements()) {
      if (node.field_text("role") != "master") continue;
      std::string_view host = node.field_text("endpoint");
      if (host.empty() || host == "?") host = node.field_text("ip");
      auto const* port = node.field(port_field);
      if (port == nullptr || port->kind() != resp::type::integer) {
        throw std::runtime_error{fmt::format("CLUSTER SHARDS gives the master at {} no {}", host, port_field)};
      }
      masters.push_back({host.empty() ? asked_host : std::string{host}, static_cast<std::uint16_t>(port->integer())});
    }
  }
  if (masters.empty()) throw std::runtime_error{"CLUSTER SHARDS names no master that serves slots"};
  co_return masters;
}

// The cluster's settings (credentials, TLS, timeouts) for a plain connection to one master.
config master_config(client const& c, node_address const& master) {
  auto cfg = c.cfg().for_node(master);
  cfg.mode = topology::standalone;
  cfg.seeds.clear();
  return cfg;
}

// One master's keys through a client of its own, stopped by its destructor however this ends.
asio::awaitable<void> scan_master(client::executor_type ex, config const& cfg, key_scan const& scan,
                                  std::vector<std::string>& names) {
  client c{std::move(ex), cfg};
  c.start();
  co_await connect(c);
  co_await scan_node(c, scan, names);
}

}  // namespace

asio::awaitable<std::vector<std::string>> scan_keys(client& c, key_scan const& scan) {
  std::vector<std::string> names;
  if (c.cfg().mode == topology::cluster) {
    auto const masters = co_await cluster_masters(c);
    for (auto const& master : masters) {
      if (std::ssize(names) >= scan.max_keys) break;
      auto const cfg = master_config(c, master);
      try {
        co_await scan_master(c.get_executor(), cfg, scan, names);
      } catch (std::exception const& e) {
        throw std::runtime_error{fmt::format("cannot scan the master {}: {}", cfg.endpoint(), e.what())};
      }
    }
  } else {
    co_await scan_node(c, scan, names);
  }
  if (std::ssize(names) > scan.max_keys) names.resize(static_cast<std::size_t>(scan.max_keys));
  co_return names;
}

}  // namespace redisync::cli
