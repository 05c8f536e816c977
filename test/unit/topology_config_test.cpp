// URLs of the three topologies, what a bad one says, and the cluster hash slot of a key.

#include <redisync/config.hpp>

#include "routing/hash_slot.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

using redisync::config;
using redisync::node_address;
using redisync::topology;
using redisync::detail::routing::hash_slot;

BOOST_AUTO_TEST_SUITE(topology_config)

BOOST_AUTO_TEST_CASE(a_cluster_url_lists_its_seed_nodes_and_takes_credentials_and_tls) {
  auto const c = config::from_url("rediss-cluster://app:secret@10.0.0.1:7000,10.0.0.2:7001,[::1]:7002?tls_verify=no");
  BOOST_TEST((c.mode == topology::cluster));
  BOOST_TEST(c.tls);
  BOOST_TEST(!c.tls_verify_peer);
  BOOST_TEST(c.username == "app");
  BOOST_TEST(c.password == "secret");
  BOOST_TEST_REQUIRE(c.seeds.size() == 3u);
  BOOST_TEST((c.seeds[0] == node_address{"10.0.0.1", 7000}));
  BOOST_TEST((c.seeds[1] == node_address{"10.0.0.2", 7001}));
  BOOST_TEST((c.seeds[2] == node_address{"::1", 7002}));
  BOOST_TEST(c.host == "10.0.0.1");
  BOOST_TEST(c.port == 7000);
  BOOST_TEST(c.problem().empty());
}

BOOST_AUTO_TEST_CASE(a_sentinel_url_names_the_master_and_the_sentinels_own_password) {
  auto const c = config::from_url("redis-sentinel://:datapw@127.0.0.1:26379,127.0.0.1:26380/mymaster?sentinel_password=s1");
  BOOST_TEST((c.mode == topology::sentinel));
  BOOST_TEST(!c.tls);
  BOOST_TEST(c.password == "datapw");
  BOOST_TEST(c.sentinel_password == "s1");
  BOOST_TEST(c.sentinel_master_name == "mymaster");
  BOOST_TEST(c.seeds.size() == 2u);
  auto const s = c.for_sentinel(c.seeds[1]);
  BOOST_TEST(s.password == "s1");
  BOOST_TEST(s.port == 26380);
}

BOOST_AUTO_TEST_CASE(a_standalone_url_is_still_one_server) {
  auto const c = config::from_url("redis://127.0.0.1:6390/2");
  BOOST_TEST((c.mode == topology::standalone));
  BOOST_TEST(c.seeds.empty());
  BOOST_TEST(c.seed_nodes().size() == 1u);
  BOOST_TEST(c.database == 2);
}

BOOST_AUTO_TEST_CASE(a_bad_topology_url_names_the_part_that_is_wrong) {
  auto says = [](std::string const& url, std::string const& part) {
    auto const problem = config::url_problem(url);
    BOOST_TEST_INFO(url << " -> " << problem);
    BOOST_TEST(problem.find(part) != std::string::npos);
  };
  says("redis-sentinel://127.0.0.1:26379", "names no master");
  says("redis-sentinel://127.0.0.1:26379/", "names no master");
  says("redis-cluster://127.0.0.1:7000,,127.0.0.1:7001", "empty host");
  says("redis-cluster://127.0.0.1:7000,127.0.0.1:99999", "host '127.0.0.1:99999': the port");
  says("redis-cluster://127.0.0.1:7000/3", "database 0 only");
  says("redis-cluster://127.0.0.1:7000?sentinel_password=x", "sentinel_password");
  says("redis-swarm://127.0.0.1:7000", "the scheme must be");
  says("redis-sentinel://127.0.0.1:26379/m?tls_ca_file=/x", "for TLS");
}

BOOST_AUTO_TEST_CASE(hash_slots_follow_crc16_and_hash_tags) {
  BOOST_TEST(hash_slot("123456789") == 12739u);  // CRC16-XMODEM("123456789") = 0x31C3
  BOOST_TEST(hash_slot("foo") == 12182u);
  BOOST_TEST(hash_slot("{user1000}.following") == hash_slot("user1000"));
  BOOST_TEST(hash_slot("redisson_lock__channel:{orders:1}") == hash_slot("orders:1"));
  BOOST_TEST(hash_slot("a{}b") == hash_slot(std::string{"a{}b"}));  // an empty tag: the whole key
  BOOST_TEST(hash_slot("{}x") != hash_slot("x"));
  BOOST_TEST(hash_slot("foo{bar}{zap}") == hash_slot("bar"));  // the first tag only
}

BOOST_AUTO_TEST_CASE(every_slot_has_a_tag_whose_keys_land_in_it) {
  using redisync::detail::routing::slot_tag;
  for (std::uint32_t slot = 0; slot < redisync::detail::routing::cluster_slots; ++slot) {
    auto const key = "redisync_alive:{" + std::string{slot_tag(slot)} + "}:client";
    BOOST_TEST_REQUIRE(hash_slot(key) == slot);
  }
}

BOOST_AUTO_TEST_SUITE_END()
