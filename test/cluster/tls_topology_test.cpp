// Locks over TLS on a cluster and on a Sentinel set whose processes serve TLS on ports of their
// own: the client reaches every node through TLS alone, wakes waiters there, and follows a failover.

#include "testbed/redis_cluster.hpp"
#include "testbed/redis_sentinel.hpp"
#include "support/lock_fixture.hpp"
#include "support/tls_redis.hpp"

#include <redisync/redisync.hpp>

#include <set>

namespace asio = boost::asio;
using namespace redisync::test::lock_names;
using redisync::lock_kind;
using redisync::process::redis_cluster;
using redisync::process::redis_sentinel_set;

BOOST_AUTO_TEST_SUITE(topologies_over_tls, *boost::unit_test::label("cluster"))

// A cluster that serves TLS: the seeds are TLS ports, the map names every master's TLS port, and
// every kind locks, and wakes a waiter over sharded pub/sub, through TLS alone.
BOOST_AUTO_TEST_CASE(every_kind_works_on_a_cluster_over_tls) {
  redisync::test::test_certificates certificates{fmt::format("cluster-{}", ::getpid())};
  redisync::process::cluster_options options;
  options.tls = {certificates.file("server.pem"), certificates.file("server.key"), certificates.file("ca.pem")};
  redis_cluster cluster{options};
  std::set<std::string> tls_addresses;
  for (std::size_t i = 0; i < cluster.nodes().size(); ++i) {
    tls_addresses.insert(fmt::format("127.0.0.1:{}", cluster.tls_port(i)));
  }
  auto cfg = fast_config(cluster.tls_url("tls_ca_file=" + certificates.file("ca.pem")));
  run_client(cfg, [&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto me = c.new_owner(), other = c.new_owner();
    std::set<std::string> nodes_used;
    for (int i = 0; i < 40; ++i) {
      auto const kind = redisync::test::all_lock_kinds[i % 4];
      auto const name = "tls-" + std::to_string(i);
      auto h = co_await redisync::test::lock_of_kind(me, kind, name).acquire(asio::use_awaitable);
      nodes_used.insert(c.node_of(name));
      // Released with a waiter of another owner: its wake-up comes over the TLS connection.
      auto const waiter_kind = kind == lock_kind::read ? lock_kind::write : kind;
      redisync::test::background_acquire waiter{ctx, redisync::test::lock_of_kind(other, waiter_kind, name)};
      auto waits = [&] { return c.metrics().waiters == 1; };
      co_await redisync::test::wait_until(waits, 5s);
      co_await h.release(asio::use_awaitable);
      BOOST_TEST_REQUIRE(co_await waiter.wait(5s));
      BOOST_TEST_REQUIRE(waiter.result().has_value());
      co_await waiter.result()->release(asio::use_awaitable);
    }
    BOOST_TEST(nodes_used.size() == 3u);
    for (auto const& node : nodes_used) BOOST_TEST(tls_addresses.contains(node), node << " is no TLS port");
  }, std::chrono::seconds{60});
}

// Every process serves TLS as well: the client asks the sentinels over TLS, reaches the master's
// TLS port that they report, and follows a failover to the other one.
BOOST_AUTO_TEST_CASE(sentinels_and_the_master_over_tls_through_a_failover) {
  redisync::test::test_certificates certificates{fmt::format("sentinel-{}", ::getpid())};
  redisync::process::sentinel_options options;
  options.tls = {certificates.file("server.pem"), certificates.file("server.key"), certificates.file("ca.pem")};
  redis_sentinel_set set{options};
  auto cfg = fast_config(set.tls_url("tls_ca_file=" + certificates.file("ca.pem")));
  run_client(cfg, [&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto me = c.new_owner(), other = c.new_owner();
    for (int round = 0; round < 2; ++round) {
      auto const master = fmt::format("127.0.0.1:{}", set.current_master_port());
      auto h = co_await me.lock("tls-sentinel").acquire(asio::use_awaitable);
      BOOST_TEST(c.node_of("tls-sentinel") == master);
      redisync::test::background_acquire waiter{ctx, other.lock("tls-sentinel")};
      auto waits = [&] { return c.metrics().waiters == 1; };
      co_await redisync::test::wait_until(waits, 5s);
      co_await h.release(asio::use_awaitable);
      BOOST_TEST_REQUIRE(co_await waiter.wait(5s));
      BOOST_TEST_REQUIRE(waiter.result().has_value());
      BOOST_TEST(waiter.result()->token() > h.token());
      co_await waiter.result()->release(asio::use_awaitable);
      if (round == 0) {
        auto const connects = c.metrics().connects;
        set.failover();
        co_await redisync::test::wait_until([&] { return c.metrics().connects > connects; }, 10s);
      }
    }
  }, std::chrono::seconds{90});
}

BOOST_AUTO_TEST_SUITE_END()
