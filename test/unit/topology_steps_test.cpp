// The topology steps without sockets: addresses, a MOVED or ASK reply, a CLUSTER SHARDS answer
// and the slot map it changes, a Sentinel's question and answer. The cluster and Sentinel routers
// only carry replies to these and act on what they return (the cluster tier runs them for real).

#include "address.hpp"
#include "routing/cluster_map.hpp"
#include "routing/sentinel_answer.hpp"

#include "support/resp_wire.hpp"

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

namespace resp = redisync::resp;
namespace routing = redisync::detail::routing;
using redisync::node_address;

using redisync::test::array;
using redisync::test::bulk;
using redisync::test::integer;
using redisync::test::map;
using redisync::test::parsed;

namespace {

std::string node(std::string const& role, std::string const& endpoint, long long port, long long tls_port = 0) {
  if (tls_port != 0) {
    return map({{"id", bulk("n")}, {"port", integer(port)}, {"tls-port", integer(tls_port)}, {"ip", bulk("10.0.0.9")},
                {"endpoint", bulk(endpoint)}, {"role", bulk(role)}});
  }
  return map({{"id", bulk("n")}, {"port", integer(port)}, {"ip", bulk("10.0.0.9")}, {"endpoint", bulk(endpoint)},
              {"role", bulk(role)}});
}

}  // namespace

BOOST_AUTO_TEST_SUITE(addresses)

BOOST_AUTO_TEST_CASE(a_port_is_a_number_from_1_to_65535_and_nothing_else) {
  BOOST_TEST(redisync::detail::parse_port("6379").value() == 6379);
  BOOST_TEST(redisync::detail::parse_port("65535").value() == 65535);
  for (auto const* bad : {"", "0", "65536", "63a", "-1", " 1", "1 "}) {
    BOOST_TEST(!redisync::detail::parse_port(bad).has_value(), bad);
  }
}

BOOST_AUTO_TEST_CASE(host_and_port_read_and_print_alike_ipv6_included) {
  using redisync::detail::address_text;
  using redisync::detail::parse_host_port;
  BOOST_TEST((parse_host_port("10.0.0.1:7000").value() == node_address{"10.0.0.1", 7000}));
  BOOST_TEST((parse_host_port("::1:7000").value() == node_address{"::1", 7000}));
  BOOST_TEST((parse_host_port("[::1]:7000").value() == node_address{"::1", 7000}));
  BOOST_TEST((parse_host_port(":7000", "replied").value() == node_address{"replied", 7000}));
  BOOST_TEST(!parse_host_port("7000").has_value());
  BOOST_TEST(!parse_host_port("host:0").has_value());
  BOOST_TEST(address_text({"::1", 7000}) == "[::1]:7000");
  BOOST_TEST(address_text({"h", 1}) == "h:1");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(cluster_redirects)

BOOST_AUTO_TEST_CASE(moved_and_ask_name_the_slot_and_the_node) {
  node_address const replied{"10.0.0.1", 7000};
  auto const moved = routing::read_redirect("MOVED 3999 10.0.0.2:7001", replied);
  BOOST_TEST_REQUIRE(moved.has_value());
  BOOST_TEST((*moved == routing::redirect{false, 3999, {"10.0.0.2", 7001}}));
  auto const ask = routing::read_redirect("ASK 16383 :7002", replied);
  BOOST_TEST_REQUIRE(ask.has_value());
  BOOST_TEST((*ask == routing::redirect{true, 16383, {"10.0.0.1", 7002}}));  // an empty host: the one that replied
}

BOOST_AUTO_TEST_CASE(anything_else_is_no_redirect) {
  node_address const replied{"h", 1};
  for (auto const* text : {"MOVED", "MOVED 3999", "MOVED 16384 h:1", "MOVED x h:1", "ASK 1 h:0", "TRYAGAIN later",
                           "ERR MOVED 1 h:1", "MOVED -1 h:1"}) {
    BOOST_TEST(!routing::read_redirect(text, replied).has_value(), text);
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(cluster_shards)

BOOST_AUTO_TEST_CASE(each_shard_gives_its_ranges_to_its_master) {
  auto const reply = parsed(array({
      map({{"slots", array({integer(0), integer(100), integer(200), integer(300)})},
           {"nodes", array({node("replica", "r1", 7003), node("master", "m1", 7000)})}}),
      map({{"slots", array({integer(101), integer(199)})}, {"nodes", array({node("master", "m2", 7001)})}}),
      // A shard without slots (a master being added) and one whose master is down (none listed).
      map({{"slots", array({})}, {"nodes", array({node("master", "m3", 7002)})}}),
      map({{"slots", array({integer(301), integer(16383)})}, {"nodes", array({node("replica", "r4", 7005)})}}),
  }));
  auto const answer = routing::read_shards(reply, false, "asked");
  BOOST_TEST(answer.failure.empty());
  BOOST_TEST_REQUIRE(answer.shards.size() == 2u);
  BOOST_TEST((answer.shards[0] == routing::shard{{{0, 100}, {200, 300}}, {"m1", 7000}}));
  BOOST_TEST((answer.shards[1] == routing::shard{{{101, 199}}, {"m2", 7001}}));
}

BOOST_AUTO_TEST_CASE(tls_reaches_masters_on_their_tls_port_and_an_unknown_endpoint_falls_back) {
  auto const reply = parsed(array({map({{"slots", array({integer(0), integer(16383)})},
                                        {"nodes", array({node("master", "?", 7000, 17000)})}})}));
  auto const tls = routing::read_shards(reply, true, "asked");
  BOOST_TEST_REQUIRE(tls.shards.size() == 1u);
  BOOST_TEST((tls.shards[0].master == node_address{"10.0.0.9", 17000}));  // "?": the ip field
  BOOST_TEST((routing::read_shards(reply, false, "asked").shards[0].master == node_address{"10.0.0.9", 7000}));
}

BOOST_AUTO_TEST_CASE(a_server_that_is_no_cluster_node_is_told_apart_from_a_passing_failure) {
  auto const standalone = routing::read_shards(parsed("-ERR This instance has cluster support disabled\r\n"), false, "h");
  BOOST_TEST(standalone.not_a_cluster);
  BOOST_TEST(standalone.failure.find("use redis:// for one server") != std::string::npos);
  auto const sentinel = routing::read_shards(parsed("-ERR unknown command 'CLUSTER'\r\n"), false, "h");
  BOOST_TEST(sentinel.not_a_cluster);
  BOOST_TEST(sentinel.failure.find("redis-sentinel://") != std::string::npos);
  auto const loading = routing::read_shards(parsed("-LOADING Redis is loading\r\n"), false, "h");
  BOOST_TEST(!loading.not_a_cluster);
  BOOST_TEST(loading.failure == "LOADING Redis is loading");
  auto const empty = routing::read_shards(parsed(array({})), false, "h");
  BOOST_TEST(empty.shards.empty());
  BOOST_TEST(empty.failure == "no shard serves a slot");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(slot_maps)

BOOST_AUTO_TEST_CASE(a_map_says_when_a_known_slot_got_another_master) {
  routing::slot_map map;
  BOOST_TEST(!map.known());
  BOOST_TEST(map.node_of(5) == routing::slot_map::no_node);
  std::vector<routing::shard> const shards{{{{0, 8191}}, {"a", 1}}, {{{8192, 16383}}, {"b", 2}}};
  BOOST_TEST(!map.update(shards, {0, 1}));  // nothing was known: no change of master
  BOOST_TEST(map.known());
  BOOST_TEST(map.node_of(8191) == 0u);
  BOOST_TEST(map.node_of(8192) == 1u);
  BOOST_TEST(map.a_slot_of(1) == 8192u);
  BOOST_TEST(!map.update(shards, {0, 1}));  // the same map again
  // A failover: the second shard's replica took over.
  BOOST_TEST(map.update({{{{8192, 16383}}, {"b2", 3}}}, {2}));
  BOOST_TEST(map.node_of(0) == 0u);  // a shard left out keeps its master
  BOOST_TEST(map.node_of(16383) == 2u);
}

BOOST_AUTO_TEST_CASE(a_moved_slot_changes_master_only_if_it_was_known_elsewhere) {
  routing::slot_map map;
  BOOST_TEST(!map.move(7, 4));  // not known before
  BOOST_TEST(map.node_of(7) == 4u);
  BOOST_TEST(!map.move(7, 4));
  BOOST_TEST(map.move(7, 5));
  BOOST_TEST(map.node_of(7) == 5u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(sentinel_answers)

BOOST_AUTO_TEST_CASE(the_question_carries_the_sentinels_own_auth_only_when_they_have_a_password) {
  redisync::config plain;
  auto const q = routing::ask_sentinel(plain, "mymaster");
  BOOST_TEST(!q.auth);
  BOOST_TEST(q.replies == 2u);
  redisync::config with_auth;
  with_auth.username = "watcher";
  with_auth.password = "s3cret";
  auto const a = routing::ask_sentinel(with_auth, "mymaster");
  BOOST_TEST(a.auth);
  BOOST_TEST(a.replies == 3u);
  std::string const payload = redisync::resp::request{a.request}.take_payload();
  BOOST_TEST(payload.starts_with(array({bulk("AUTH"), bulk("watcher"), bulk("s3cret")})));
  BOOST_TEST(payload.find(bulk("GET-MASTER-ADDR-BY-NAME") + bulk("mymaster")) != std::string::npos);
}

BOOST_AUTO_TEST_CASE(an_answer_names_the_master_and_the_other_sentinels) {
  auto const q = routing::ask_sentinel(redisync::config{}, "mymaster");
  std::vector<resp::value> const replies{
      parsed(array({bulk("10.0.0.5"), bulk("6380")})),
      parsed(array({map({{"ip", bulk("10.0.0.7")}, {"port", bulk("26380")}}), map({{"ip", bulk("")}, {"port", bulk("1")}}),
                    map({{"ip", bulk("10.0.0.8")}, {"port", bulk("bad")}})}))};
  auto const answer = routing::read_sentinel_answer(q, replies, "mymaster");
  BOOST_TEST_REQUIRE(answer.master.has_value());
  BOOST_TEST((*answer.master == node_address{"10.0.0.5", 6380}));
  BOOST_TEST_REQUIRE(answer.others.size() == 1u);
  BOOST_TEST((answer.others[0] == node_address{"10.0.0.7", 26380}));
}

BOOST_AUTO_TEST_CASE(an_answer_without_a_master_says_why) {
  auto const q = routing::ask_sentinel(redisync::config{}, "mymaster");
  auto const sentinels = parsed(array({}));
  auto const why = [&](std::string const& master_reply) {
    return routing::read_sentinel_answer(q, {parsed(master_reply), sentinels}, "mymaster").failure;
  };
  BOOST_TEST(why("_\r\n") == "it knows no master named 'mymaster'");
  BOOST_TEST(why(array({bulk("h"), bulk("0")})) == "it named the port '0'");
  BOOST_TEST(why("-ERR unknown command 'SENTINEL'\r\n") == "ERR unknown command 'SENTINEL' (is it a Sentinel?)");
  redisync::config with_auth;
  with_auth.password = "x";
  auto const a = routing::ask_sentinel(with_auth, "mymaster");
  auto const refused = routing::read_sentinel_answer(
      a, {parsed("-WRONGPASS invalid password\r\n"), parsed("_\r\n"), sentinels}, "mymaster");
  BOOST_TEST(refused.failure == "AUTH refused: WRONGPASS invalid password");
}

BOOST_AUTO_TEST_CASE(only_a_switch_of_this_master_is_announced) {
  auto const message = [](std::string const& text) {
    return parsed(">3\r\n" + bulk("message") + bulk("+switch-master") + bulk(text));
  };
  BOOST_TEST(routing::announces_new_master(message("mymaster 10.0.0.1 6379 10.0.0.2 6379"), "mymaster"));
  BOOST_TEST(!routing::announces_new_master(message("other 10.0.0.1 6379 10.0.0.2 6379"), "mymaster"));
  BOOST_TEST(!routing::announces_new_master(message("mymasterx 1 2 3 4"), "mymaster"));
  BOOST_TEST(!routing::announces_new_master(parsed(array({bulk("message")})), "mymaster"));
}

BOOST_AUTO_TEST_SUITE_END()
