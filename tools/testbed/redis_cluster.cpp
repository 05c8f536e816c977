#include "testbed/redis_cluster.hpp"
#include "testbed/child.hpp"

#include "routing/hash_slot.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <sys/wait.h>

namespace redisync::process {

namespace {

// Failure detection (node timeout 2 s) and a replica's election take a few seconds; a restarted
// node rejoins in less than one.
constexpr std::chrono::seconds transition_limit{30};
// Keys per MIGRATE: few round trips for the slots of a test, and no long block of the source.
constexpr int migrate_batch = 100;


std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  for (;;) {
    auto const end = text.find(separator);
    parts.push_back(text.substr(0, end));
    if (end == std::string_view::npos) return parts;
    text.remove_prefix(end + 1);
  }
}

// The reply of a command whose error would leave nothing to check; the error names the port.
resp::value checked(redis_server const& server, std::vector<std::string> const& args) {
  auto reply = server.command(args);
  if (reply.is_error()) {
    throw std::runtime_error{
        fmt::format("{} on port {}: {}", fmt::join(args, " "), server.port(), reply.text())};
  }
  return reply;
}

void expect_ok(redis_server const& server, std::vector<std::string> const& args) {
  auto const reply = checked(server, args);
  if (reply.text() != "OK") {
    throw std::runtime_error{
        fmt::format("{} on port {}: {}", fmt::join(args, " "), server.port(), resp::debug_string(reply))};
  }
}

// The text of an INFO-style reply: "cluster_state:ok\r\ncluster_slots_assigned:16384\r\n...".
std::string info(redis_server const& server, std::vector<std::string> const& args) {
  return std::string{checked(server, args).text()};
}

// A field of such a text; empty if absent.
std::string field(std::string_view info, std::string_view key) {
  for (auto line : split(info, '\n')) {
    if (line.ends_with('\r')) line.remove_suffix(1);
    if (line.size() > key.size() && line.starts_with(key) && line[key.size()] == ':') {
      return std::string{line.substr(key.size() + 1)};
    }
  }
  return {};
}

std::string role_of(redis_server const& server) {
  return field(info(server, {"INFO", "replication"}), "role");  // "master" or "slave"
}

// A line of CLUSTER NODES: <id> <ip:port@bus-port> <flags> <master id or -> ...
struct node_line {
  std::string id;
  std::vector<std::string> flags;  // myself, master, slave, fail?, fail, handshake, ...
  std::string master_id;
  bool has(std::string_view flag) const { return std::ranges::find(flags, flag) != flags.end(); }
  bool failing() const { return has("fail") || has("fail?"); }
};

std::vector<node_line> cluster_nodes(redis_server const& server) {
  auto const reply = checked(server, {"CLUSTER", "NODES"});
  std::vector<node_line> lines;
  for (auto line : split(reply.text(), '\n')) {
    auto const fields = split(line, ' ');
    if (fields.size() < 8) continue;
    node_line parsed{std::string{fields[0]}, {}, std::string{fields[3]}};
    for (auto flag : split(fields[2], ',')) parsed.flags.emplace_back(flag);
    lines.push_back(std::move(parsed));
  }
  return lines;
}

// An entry of CLUSTER SLOTS: a range and the ID of the master serving it.
struct slot_range {
  std::int64_t first = 0;
  std::int64_t last = 0;
  std::string master_id;
};

std::vector<slot_range> cluster_slots(redis_server const& server) {
  auto const reply = checked(server, {"CLUSTER", "SLOTS"});
  std::vector<slot_range> ranges;
  for (auto const& range : reply.elements()) {
    // first slot, last slot, then the master: ip, port, id, ...
    auto const fields = range.elements();
    ranges.push_back({fields[0].integer(), fields[1].integer(), std::string{fields[2].elements()[2].text()}});
  }
  return ranges;
}

// The ID of the master serving `slot` in `ranges`; empty if none does.
std::string owner_of(std::vector<slot_range> const& ranges, std::int64_t slot) {
  for (auto const& range : ranges) {
    if (range.first <= slot && slot <= range.last) return range.master_id;
  }
  return {};
}

std::string read_file(std::filesystem::path const& path) {
  std::ifstream in{path};
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// redis-cli colours its messages when TERM looks like a colour terminal, in a file as well.
std::string without_colours(std::string_view text) {
  std::string plain;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\x1b') {
      plain += text[i];
      continue;
    }
    i = text.find('m', i);
    if (i == std::string_view::npos) break;
  }
  return plain;
}

// `redis-cli --cluster <args>`, its output kept in `dir` under `name`; throws with that output if
// it fails or does not finish within `limit`.
void run_cluster_tool(std::vector<std::string> const& cluster_args, std::filesystem::path const& dir,
                      std::string const& name, std::chrono::milliseconds limit) {
  std::vector<std::string> args{"--cluster"};
  args.insert(args.end(), cluster_args.begin(), cluster_args.end());
  auto const out = dir / (name + ".out");
  auto const err = dir / (name + ".err");
  pid_t const pid = spawn_child("redis-cli", args, {.stdout_file = out, .stderr_file = err});
  auto const deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  bool timed_out = false;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      timed_out = true;
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    // Another process's end: nothing to wait on but time.
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  if (!timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  std::string what;
  if (timed_out) {
    what = fmt::format("did not finish within {} ms", limit.count());
  } else if (!WIFEXITED(status)) {
    what = fmt::format("was killed by signal {}", WTERMSIG(status));
  } else if (WEXITSTATUS(status) == 127) {
    what = "could not be run (is redis-cli on PATH?)";
  } else {
    what = fmt::format("exited with {}", WEXITSTATUS(status));
  }
  throw std::runtime_error{fmt::format("redis-cli --cluster {} {}; its output:\n{}{}", fmt::join(cluster_args, " "),
                                      what, without_colours(read_file(out)), without_colours(read_file(err)))};
}

// `redis-cli --cluster create` of `nodes`, its output kept in the first node's directory.
void create_cluster(std::vector<std::unique_ptr<redis_server>> const& nodes, std::size_t replicas,
                    std::chrono::milliseconds limit) {
  std::vector<std::string> args{"create"};
  for (auto const& node : nodes) args.push_back(fmt::format("127.0.0.1:{}", node->port()));
  args.insert(args.end(), {"--cluster-replicas", std::to_string(replicas), "--cluster-yes"});
  run_cluster_tool(args, nodes.front()->dir(), "cluster-create", limit);
}

}  // namespace

redis_cluster::redis_cluster(cluster_options options) {
  if (options.masters < 3) throw std::invalid_argument{"redis-cli creates no cluster of fewer than 3 masters"};
  std::size_t const count = options.masters * (1 + options.replicas_per_master);
  // Each node's port and cluster bus port, all different: the default bus port (port + 10000) may
  // be taken, or beyond 65535 for a port of the ephemeral range.
  std::size_t const ports_per_node = options.tls ? 3 : 2;
  std::vector<std::uint16_t> ports;
  while (ports.size() < ports_per_node * count) {
    auto const port = free_loopback_port();
    if (std::ranges::find(ports, port) == ports.end()) ports.push_back(port);
  }
  for (std::size_t i = 0; i < count; ++i) {
    redis_options node_options;
    auto const* const own = &ports[ports_per_node * i];
    node_options.port = own[0];
    node_options.start_timeout = options.start_timeout;
    node_options.extra_args = {"--cluster-enabled", "yes",
                               "--cluster-config-file", fmt::format("nodes-{}.conf", own[0]),
                               "--cluster-port", std::to_string(own[1]),
                               "--cluster-node-timeout", std::to_string(options.node_timeout.count())};
    if (options.tls) {
      tls_ports_.push_back(own[2]);
      auto const tls = tls_args(*options.tls, own[2]);
      node_options.extra_args.insert(node_options.extra_args.end(), tls.begin(), tls.end());
      node_options.extra_args.insert(node_options.extra_args.end(), {"--tls-cluster", "yes"});
    }
    node_options.extra_args.insert(node_options.extra_args.end(), options.extra_args.begin(),
                                   options.extra_args.end());
    nodes_.push_back(std::make_unique<redis_server>(std::move(node_options)));
    ids_.emplace_back(checked(*nodes_.back(), {"CLUSTER", "MYID"}).text());
  }
  create_cluster(nodes_, options.replicas_per_master, options.start_timeout);
  wait_until(fmt::format("the cluster of {} nodes to be ok", count), options.start_timeout,
             [this] { return unmet_ok(); });
}

std::vector<redis_server*> redis_cluster::nodes() {
  std::vector<redis_server*> all;
  for (auto const& node : nodes_) all.push_back(node.get());
  return all;
}

redis_server& redis_cluster::node(std::size_t i) { return *nodes_.at(i); }

std::string redis_cluster::describe(std::size_t i) const {
  return fmt::format("node {} (port {})", i, nodes_.at(i)->port());
}

std::size_t redis_cluster::index_of(std::string_view node_id) const {
  auto const found = std::ranges::find(ids_, node_id);
  if (found == ids_.end()) throw std::runtime_error{fmt::format("no node of the cluster has ID {}", node_id)};
  return static_cast<std::size_t>(found - ids_.begin());
}

bool redis_cluster::answers(std::size_t i) const { return nodes_[i]->running() && !paused_.contains(i); }

redis_server const& redis_cluster::any_running() const {
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (answers(i)) return *nodes_[i];
  }
  throw std::runtime_error{"no node of the cluster is running"};
}

std::vector<std::size_t> redis_cluster::running_with_role(std::string_view role) const {
  std::vector<std::size_t> found;
  for (auto const& line : cluster_nodes(any_running())) {
    if (!line.has(role) || line.failing()) continue;
    auto const i = index_of(line.id);
    if (answers(i)) found.push_back(i);
  }
  std::ranges::sort(found);
  return found;
}

std::vector<std::size_t> redis_cluster::masters() const { return running_with_role("master"); }

std::vector<std::size_t> redis_cluster::replicas() const { return running_with_role("slave"); }

std::size_t redis_cluster::master_of_slot(std::uint16_t slot) const {
  auto const& asked = any_running();
  auto const owner = owner_of(cluster_slots(asked), slot);
  if (owner.empty()) throw std::runtime_error{fmt::format("no node serves slot {} (asked port {})", slot, asked.port())};
  return index_of(owner);
}

std::size_t redis_cluster::replica_of(std::size_t master_index) const {
  for (auto const& line : cluster_nodes(any_running())) {
    if (line.master_id != ids_.at(master_index) || !line.has("slave") || line.failing()) continue;
    auto const i = index_of(line.id);
    if (answers(i)) return i;
  }
  throw std::runtime_error{fmt::format("{} has no running replica", describe(master_index))};
}

std::string redis_cluster::url() const {
  return fmt::format("redis-cluster://127.0.0.1:{},127.0.0.1:{}", nodes_.at(0)->port(), nodes_.at(1)->port());
}

std::string redis_cluster::tls_url(std::string const& query) const {
  if (tls_ports_.empty()) throw std::logic_error{"this cluster serves no TLS (cluster_options::tls)"};
  return fmt::format("rediss-cluster://127.0.0.1:{},127.0.0.1:{}{}{}", tls_ports_.at(0), tls_ports_.at(1),
                     query.empty() ? "" : "/?", query);
}

std::string redis_cluster::seed() const { return fmt::format("127.0.0.1:{}", nodes_.at(0)->port()); }

std::string redis_cluster::unmet_ok() const {
  std::vector<std::string> roles(nodes_.size());
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (!answers(i)) continue;
    auto const cluster = info(*nodes_[i], {"CLUSTER", "INFO"});
    auto const state = field(cluster, "cluster_state");
    if (state != "ok") return fmt::format("{} says cluster_state:{}", describe(i), state);
    auto const known = field(cluster, "cluster_known_nodes");
    if (known != std::to_string(nodes_.size())) {
      return fmt::format("{} knows {} of {} nodes", describe(i), known, nodes_.size());
    }
    auto const replication = info(*nodes_[i], {"INFO", "replication"});
    roles[i] = field(replication, "role");
    auto const link = field(replication, "master_link_status");
    if (roles[i] == "slave" && link != "up") {
      return fmt::format("{} is a replica with master_link_status:{}", describe(i), link);
    }
  }
  // Each node's view of the others: a failover or a rejoin is over once all of them agree.
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (!answers(i)) continue;
    auto const view = cluster_nodes(*nodes_[i]);
    for (std::size_t k = 0; k < nodes_.size(); ++k) {
      if (!answers(k)) continue;
      auto const line = std::ranges::find(view, ids_[k], &node_line::id);
      if (line == view.end()) return fmt::format("{} does not list {}", describe(i), describe(k));
      if (line->failing()) return fmt::format("{} flags {} as failing", describe(i), describe(k));
      if (!line->has(roles[k])) {
        return fmt::format("{} does not see {} as the {} it says it is", describe(i), describe(k), roles[k]);
      }
    }
  }
  return {};
}

void redis_cluster::wait_ok() {
  wait_until("the cluster to be ok", transition_limit, [this] { return unmet_ok(); });
}

void redis_cluster::failover(std::size_t replica_index, bool force) {
  auto const& replica = node(replica_index);
  std::vector<std::string> args{"CLUSTER", "FAILOVER"};
  if (force) args.emplace_back("FORCE");
  // The reply only says that the failover was scheduled.
  expect_ok(replica, args);
  wait_until(fmt::format("{} to take over as master", describe(replica_index)), transition_limit,
             [&]() -> std::string {
               auto const role = role_of(replica);
               if (role != "master") return fmt::format("{} is still a {}", describe(replica_index), role);
               return unmet_ok();
             });
}

void redis_cluster::kill_master(std::size_t master_index) {
  auto const lost = slots_of_master(master_index);
  node(master_index).kill_hard();
  wait_for_takeover(master_index, lost);
}

void redis_cluster::pause_master(std::size_t master_index) {
  auto const lost = slots_of_master(master_index);
  node(master_index).send_signal(SIGSTOP);
  paused_.insert(master_index);
  wait_for_takeover(master_index, lost);
}

void redis_cluster::resume(std::size_t i) {
  node(i).send_signal(SIGCONT);
  paused_.erase(i);
  wait_until(fmt::format("{} to rejoin the cluster", describe(i)), transition_limit, [this] { return unmet_ok(); });
}

std::vector<redis_cluster::slot_span> redis_cluster::slots_of_master(std::size_t master_index) const {
  auto const running_masters = masters();
  if (std::ranges::find(running_masters, master_index) == running_masters.end()) {
    throw std::invalid_argument{fmt::format("{} is no running master", describe(master_index))};
  }
  std::vector<slot_span> served;
  for (auto const& range : cluster_slots(*nodes_[master_index])) {
    if (range.master_id == ids_[master_index]) served.push_back({range.first, range.last});
  }
  return served;
}

// Until the failure is detected, the cluster still says ok: the slots tell when it is over.
void redis_cluster::wait_for_takeover(std::size_t master_index, std::vector<slot_span> const& lost) const {
  wait_until(fmt::format("another node to serve the slots of {}", describe(master_index)), transition_limit,
             [&]() -> std::string {
               for (std::size_t i = 0; i < nodes_.size(); ++i) {
                 if (!answers(i)) continue;
                 auto const ranges = cluster_slots(*nodes_[i]);
                 for (auto const& range : lost) {
                   if (owner_of(ranges, range.first) == ids_[master_index]) {
                     return fmt::format("{} still sees slot {} served by the lost {}", describe(i), range.first,
                                        describe(master_index));
                   }
                 }
               }
               return unmet_ok();
             });
}

void redis_cluster::restart(std::size_t i) {
  node(i).start();
  wait_until(fmt::format("{} to rejoin the cluster", describe(i)), transition_limit, [this] { return unmet_ok(); });
}

void redis_cluster::migrate_slot(std::uint16_t slot, std::size_t to_master, migrate_step stop_at) {
  auto const from = master_of_slot(slot);
  if (from == to_master) {
    throw std::invalid_argument{fmt::format("slot {} is served by {} already", slot, describe(to_master))};
  }
  auto const running_masters = masters();
  if (std::ranges::find(running_masters, to_master) == running_masters.end()) {
    throw std::invalid_argument{fmt::format("{} is no running master", describe(to_master))};
  }
  auto const s = std::to_string(slot);
  // The target first: as soon as the source is migrating, it sends clients there with ASK.
  expect_ok(node(to_master), {"CLUSTER", "SETSLOT", s, "IMPORTING", ids_[from]});
  expect_ok(node(from), {"CLUSTER", "SETSLOT", s, "MIGRATING", ids_[to_master]});
  migrations_[slot] = {from, to_master};
  if (stop_at == migrate_step::slot_marked) return;
  move_keys(slot, from, to_master);
  if (stop_at == migrate_step::keys_moved) return;
  finish_migration(slot);
}

void redis_cluster::finish_migration(std::uint16_t slot) {
  auto const found = migrations_.find(slot);
  if (found == migrations_.end()) throw std::logic_error{fmt::format("no migration of slot {} to finish", slot)};
  auto const [from, to] = found->second;
  move_keys(slot, from, to);
  auto const s = std::to_string(slot);
  // The target first: were the source first, it would send clients with MOVED to a target that,
  // only importing the slot, sends them back.
  expect_ok(node(to), {"CLUSTER", "SETSLOT", s, "NODE", ids_[to]});
  expect_ok(node(from), {"CLUSTER", "SETSLOT", s, "NODE", ids_[to]});
  // Replicas refuse SETSLOT: they learn the owner from their masters.
  for (auto const m : masters()) {
    if (m != from && m != to) expect_ok(node(m), {"CLUSTER", "SETSLOT", s, "NODE", ids_[to]});
  }
  migrations_.erase(found);
  wait_until(fmt::format("every node to see slot {} served by {}", slot, describe(to)), transition_limit,
             [&]() -> std::string {
               for (std::size_t i = 0; i < nodes_.size(); ++i) {
                 if (!answers(i)) continue;
                 auto const owner = owner_of(cluster_slots(*nodes_[i]), slot);
                 if (owner != ids_[to]) {
                   return fmt::format("{} sees slot {} served by {}", describe(i), slot,
                                      owner.empty() ? "no node" : describe(index_of(owner)));
                 }
               }
               return {};
             });
}

bool redis_cluster::migrate_one_key(std::uint16_t slot) {
  auto const found = migrations_.find(slot);
  if (found == migrations_.end()) throw std::logic_error{fmt::format("slot {} is not migrating", slot)};
  auto const keys = checked(node(found->second.first), {"CLUSTER", "GETKEYSINSLOT", std::to_string(slot), "1"});
  if (keys.elements().empty()) return false;
  migrate(slot, found->second.first, found->second.second, {std::string{keys.elements()[0].text()}});
  return true;
}

void redis_cluster::reshard(std::size_t from_master, std::size_t to_master, int slots) {
  run_cluster_tool({"reshard", fmt::format("127.0.0.1:{}", node(from_master).port()), "--cluster-from", ids_[from_master],
                    "--cluster-to", ids_[to_master], "--cluster-slots", std::to_string(slots), "--cluster-yes"},
                   node(from_master).dir(), "cluster-reshard", transition_limit);
  wait_ok();
}

void redis_cluster::migrate_key(std::uint16_t slot, std::string const& key) {
  auto const found = migrations_.find(slot);
  if (found == migrations_.end()) throw std::logic_error{fmt::format("slot {} is not migrating", slot)};
  migrate(slot, found->second.first, found->second.second, {key});
}

void redis_cluster::move_keys(std::uint16_t slot, std::size_t from, std::size_t to) {
  for (;;) {
    auto const keys = checked(node(from), {"CLUSTER", "GETKEYSINSLOT", std::to_string(slot), std::to_string(migrate_batch)});
    if (keys.elements().empty()) return;
    std::vector<std::string> names;
    for (auto const& key : keys.elements()) names.emplace_back(key.text());
    migrate(slot, from, to, names);
  }
}

void redis_cluster::migrate(std::uint16_t slot, std::size_t from, std::size_t to, std::vector<std::string> const& keys) {
  // An empty key and KEYS: the keys follow; database 0, the only one of a cluster.
  std::vector<std::string> migrate{"MIGRATE", "127.0.0.1", std::to_string(node(to).port()), "", "0", "5000", "KEYS"};
  migrate.insert(migrate.end(), keys.begin(), keys.end());
  // NOKEY: the keys expired meanwhile.
  auto const reply = checked(node(from), migrate);
  if (reply.text() != "OK" && reply.text() != "NOKEY") {
    throw std::runtime_error{fmt::format("MIGRATE of slot {} from {} to {}: {}", slot, describe(from), describe(to),
                                         resp::debug_string(reply))};
  }
}

std::uint16_t key_slot(std::string_view key) {
  return static_cast<std::uint16_t>(detail::routing::hash_slot(key));
}

}  // namespace redisync::process
