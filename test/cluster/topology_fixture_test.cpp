// The topology fixtures themselves: a Redis Cluster and a Sentinel set on loopback come up, fail
// over, lose a master and move a slot as the cluster and sentinel client tests will need.

#include "testbed/redis_cluster.hpp"
#include "testbed/redis_sentinel.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <string>
#include <vector>

using redisync::process::key_slot;
using redisync::process::migrate_step;
using redisync::process::redis_cluster;
using redisync::process::redis_sentinel_set;
using redisync::process::sentinel_options;

namespace {

bool contains(std::vector<std::size_t> const& indexes, std::size_t i) {
  return std::ranges::find(indexes, i) != indexes.end();
}

std::string role_of(redisync::process::redis_server const& server) {
  return std::string{server.command({"ROLE"}).elements()[0].text()};
}

// A master of `cluster` other than `master`.
std::size_t other_master(redis_cluster const& cluster, std::size_t master) {
  auto const masters = cluster.masters();
  return *std::ranges::find_if(masters, [&](std::size_t m) { return m != master; });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(topology_fixtures, *boost::unit_test::label("cluster"))

BOOST_AUTO_TEST_CASE(a_cluster_comes_up_with_three_masters_and_the_servers_key_slots) {
  redis_cluster cluster;
  BOOST_TEST(cluster.nodes().size() == 6u);
  BOOST_TEST(cluster.masters().size() == 3u);
  BOOST_TEST(cluster.replicas().size() == 3u);
  for (auto* node : cluster.nodes()) {
    auto const info = node->command({"CLUSTER", "INFO"});
    BOOST_TEST(std::string{info.text()}.find("cluster_state:ok") != std::string::npos, node->port());
  }
  for (std::string_view key : {"foo", "{user1000}.following", "a{}b", "{}x", "123456789"}) {
    auto const expected = cluster.node(0).command({"CLUSTER", "KEYSLOT", key}).integer();
    BOOST_TEST(key_slot(key) == expected, key);
  }
  BOOST_TEST(key_slot("123456789") == 12739);
  BOOST_TEST(key_slot("{user1000}.following") == key_slot("user1000"));
  // The slot's master takes the key; another master sends the client there.
  auto const owner = cluster.master_of_slot(key_slot("foo"));
  BOOST_TEST(cluster.node(owner).command({"SET", "foo", "bar"}).text() == "OK");
  auto const moved = cluster.node(other_master(cluster, owner)).command({"GET", "foo"});
  BOOST_TEST(moved.text() == "MOVED " + std::to_string(key_slot("foo")) + " 127.0.0.1:" +
                                 std::to_string(cluster.node(owner).port()));
  BOOST_TEST(cluster.seed() == "127.0.0.1:" + std::to_string(cluster.node(0).port()));
  BOOST_TEST(cluster.url() == "redis-cluster://" + cluster.seed() + ",127.0.0.1:" +
                                  std::to_string(cluster.node(1).port()));
}

BOOST_AUTO_TEST_CASE(a_cluster_failover_swaps_the_roles_of_a_master_and_its_replica) {
  redis_cluster cluster;
  auto const master = cluster.master_of_slot(0);
  auto const replica = cluster.replica_of(master);
  cluster.failover(replica);
  BOOST_TEST(role_of(cluster.node(replica)) == "master");
  BOOST_TEST(role_of(cluster.node(master)) == "slave");
  BOOST_TEST(contains(cluster.masters(), replica));
  BOOST_TEST(contains(cluster.replicas(), master));
  BOOST_TEST(cluster.master_of_slot(0) == replica);
  BOOST_TEST(cluster.replica_of(replica) == master);
}

BOOST_AUTO_TEST_CASE(a_killed_master_s_slots_go_to_its_replica_and_it_rejoins_as_a_replica) {
  redis_cluster cluster;
  auto const slot = key_slot("foo");
  auto const master = cluster.master_of_slot(slot);
  auto const replica = cluster.replica_of(master);
  cluster.kill_master(master);
  BOOST_TEST(!cluster.node(master).running());
  BOOST_TEST(cluster.master_of_slot(slot) == replica);
  BOOST_TEST(cluster.masters().size() == 3u);
  BOOST_TEST(cluster.node(replica).command({"SET", "foo", "after"}).text() == "OK");
  cluster.restart(master);
  BOOST_TEST(role_of(cluster.node(master)) == "slave");
  BOOST_TEST(cluster.replica_of(replica) == master);
  BOOST_TEST(cluster.master_of_slot(slot) == replica);
}

BOOST_AUTO_TEST_CASE(a_migrated_slot_takes_its_keys_to_the_new_master_step_by_step) {
  redis_cluster cluster;
  auto const moved_to = [&](std::uint16_t slot, std::size_t i) {
    return "MOVED " + std::to_string(slot) + " 127.0.0.1:" + std::to_string(cluster.node(i).port());
  };

  // Stopped once the slot is marked: the source still has the key and serves it.
  std::string const key = "{marked}key";
  auto const slot = key_slot(key);
  auto const from = cluster.master_of_slot(slot);
  auto const to = other_master(cluster, from);
  BOOST_TEST(cluster.node(from).command({"SET", key, "v1"}).text() == "OK");
  cluster.migrate_slot(slot, to, migrate_step::slot_marked);
  BOOST_TEST(cluster.node(from).command({"GET", key}).text() == "v1");
  BOOST_TEST(cluster.node(to).command({"GET", key}).text() == moved_to(slot, from));
  BOOST_TEST(cluster.master_of_slot(slot) == from);
  cluster.finish_migration(slot);
  BOOST_TEST(cluster.master_of_slot(slot) == to);
  BOOST_TEST(cluster.node(to).command({"GET", key}).text() == "v1");
  BOOST_TEST(cluster.node(from).command({"GET", key}).text() == moved_to(slot, to));

  // Stopped once the keys moved: the source sends clients on with ASK, the target serves them
  // after ASKING.
  std::string const other_key = "{moved}key";
  auto const other_slot = key_slot(other_key);
  auto const other_from = cluster.master_of_slot(other_slot);
  auto const other_to = other_master(cluster, other_from);
  BOOST_TEST(cluster.node(other_from).command({"SET", other_key, "v2"}).text() == "OK");
  cluster.migrate_slot(other_slot, other_to, migrate_step::keys_moved);
  BOOST_TEST(cluster.node(other_from).command({"GET", other_key}).text() ==
             "ASK " + std::to_string(other_slot) + " 127.0.0.1:" + std::to_string(cluster.node(other_to).port()));
  BOOST_TEST(cluster.node(other_to).commands({{"ASKING"}, {"GET", other_key}}).text() == "v2");
  cluster.finish_migration(other_slot);
  BOOST_TEST(cluster.master_of_slot(other_slot) == other_to);
  BOOST_TEST(cluster.node(other_to).command({"GET", other_key}).text() == "v2");
}

BOOST_AUTO_TEST_CASE(a_sentinel_set_comes_up_and_fails_over) {
  redis_sentinel_set set;
  auto const old_port = set.current_master_port();
  BOOST_TEST(set.master().port() == old_port);
  BOOST_TEST(role_of(set.master()) == "master");
  BOOST_TEST(role_of(set.replica()) == "slave");
  BOOST_TEST(set.master_name() == "mymaster");
  auto const ports = set.sentinel_ports();
  BOOST_TEST(ports.size() == 3u);
  BOOST_TEST(set.url() == "redis-sentinel://127.0.0.1:" + std::to_string(ports[0]) + ",127.0.0.1:" +
                              std::to_string(ports[1]) + ",127.0.0.1:" + std::to_string(ports[2]) + "/mymaster");
  set.failover();
  BOOST_TEST(set.current_master_port() != old_port);
  BOOST_TEST(set.master().port() == set.current_master_port());
  BOOST_TEST(role_of(set.master()) == "master");
  BOOST_TEST(set.replica().port() == old_port);
}

BOOST_AUTO_TEST_CASE(a_sentinel_set_with_passwords_comes_up_and_fails_over) {
  sentinel_options options;
  options.sentinel_password = "sentinel-secret";
  options.data_password = "data-secret";
  redis_sentinel_set set{options};
  for (auto* node : {&set.master(), &set.replica()}) {
    BOOST_TEST(node->command({"CONFIG", "GET", "requirepass"}).elements()[1].text() == "data-secret");
    BOOST_TEST(node->command({"CONFIG", "GET", "masterauth"}).elements()[1].text() == "data-secret");
  }
  auto const old_port = set.current_master_port();
  set.failover();
  BOOST_TEST(set.current_master_port() != old_port);
  BOOST_TEST(role_of(set.master()) == "master");
}

BOOST_AUTO_TEST_SUITE_END()
