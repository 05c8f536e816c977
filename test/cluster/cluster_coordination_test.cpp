// Multi-locks and leader elections on a real 3-master, 3-replica Redis Cluster: a multi-lock over
// names on every master (two of them in one slot) takes each slot's members in one call, excludes
// another client's locks and multi-lock, and hands over; an election on names served by every master
// hands over on resign and is observed from another client over sharded pub/sub.

#include "testbed/redis_cluster.hpp"
#include "support/cluster_names.hpp"
#include "support/lock_fixture.hpp"

#include <redisync/redisync.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include <memory>

namespace asio = boost::asio;
using namespace redisync::test::lock_names;
using redisync::process::redis_cluster;

namespace {

using redisync::test::name_on;

struct multi_done {
  explicit multi_done(asio::any_io_executor ex) : done{std::move(ex)} {}
  redisync::test::event done;
  std::optional<redisync::multi_held> held;
};

std::shared_ptr<multi_done> multi_in_background(asio::io_context& ctx, redisync::multi_lock m) {
  auto state = std::make_shared<multi_done>(ctx.get_executor());
  auto run = [](std::shared_ptr<multi_done> s, redisync::multi_lock m) -> asio::awaitable<void> {
    auto [ec, h] = co_await m.acquire(asio::as_tuple(asio::use_awaitable));
    if (!ec) s->held = std::move(h);
    s->done.notify();
  };
  asio::co_spawn(ctx, run(state, std::move(m)), asio::detached);
  return state;
}

struct campaign_done {
  explicit campaign_done(asio::any_io_executor ex) : done{std::move(ex)} {}
  redisync::test::event done;
  std::optional<held> leadership;
};

std::shared_ptr<campaign_done> campaign_in_background(asio::io_context& ctx, redisync::election e) {
  auto state = std::make_shared<campaign_done>(ctx.get_executor());
  auto run = [](std::shared_ptr<campaign_done> s, redisync::election e) -> asio::awaitable<void> {
    auto [ec, h] = co_await e.try_campaign("there", 5s, asio::as_tuple(asio::use_awaitable));
    if (!ec) s->leadership = std::move(h);
    s->done.notify();
  };
  asio::co_spawn(ctx, run(state, std::move(e)), asio::detached);
  return state;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cluster_coordination)

BOOST_AUTO_TEST_CASE(a_multi_lock_over_every_master_excludes_another_client_and_hands_over) {
  redis_cluster cluster;
  auto const cfg = fast_config(cluster.url());
  run_client(cfg, [&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    running_client other{ctx, cfg};
    std::vector<std::string> names;
    for (std::size_t master = 0; master < 3; ++master) names.push_back(name_on(cluster, master, "multi-"));
    names.push_back("{acct}1");
    names.push_back("{acct}2");  // the same slot as {acct}1: one call takes both
    auto const me = c.new_owner();
    auto mine = co_await me.locks(names).acquire(asio::use_awaitable);
    BOOST_TEST(mine.is_held());
    auto const them = other->new_owner();
    for (auto const& n : names) {
      BOOST_TEST_INFO(n << " on " << c.node_of(n));
      BOOST_TEST(!(co_await them.lock(n).try_acquire(0ms, asio::use_awaitable)).has_value());
    }
    std::vector<std::string> reversed{names.rbegin(), names.rend()};
    auto const waiter = multi_in_background(ctx, them.locks(reversed));
    co_await redisync::test::wait_until([&] { return other->metrics().waiters == 1; }, 5s);
    co_await mine.release(asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await waiter->done.wait(5s));
    BOOST_TEST_REQUIRE(waiter->held.has_value());
    for (std::size_t i = 0; i < names.size(); ++i) {
      // The member of `reversed[i]`, with a token above the one it had before.
      BOOST_TEST(waiter->held->tokens()[names.size() - 1 - i] > mine.tokens()[i]);
    }
    co_await waiter->held->release(asio::use_awaitable);
    co_await other.stop();
  });
}

BOOST_AUTO_TEST_CASE(elections_on_every_master_hand_over_and_are_observed_from_another_client) {
  redis_cluster cluster;
  auto const cfg = fast_config(cluster.url());
  run_client(cfg, [&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    running_client other{ctx, cfg};
    for (std::size_t master = 0; master < 3; ++master) {
      auto const name = name_on(cluster, master, "election-");
      BOOST_TEST_CONTEXT("election " << name) {
        auto const here = c.election(name);
        auto watch = other->election(name).observe();
        auto first = co_await here.campaign("here", asio::use_awaitable);
        auto const seen_first = co_await watch.next(5s, asio::use_awaitable);
        BOOST_TEST(seen_first.term == first.token());
        auto const there = other->election(name);
        auto const candidate = campaign_in_background(ctx, there);
        co_await redisync::test::wait_until([&] { return other->metrics().waiters == 1; }, 5s);
        co_await here.resign(first, asio::use_awaitable);
        BOOST_TEST_REQUIRE(co_await candidate->done.wait(5s));
        auto& second = candidate->leadership;
        BOOST_TEST_REQUIRE(second.has_value());
        BOOST_TEST(second->token() > first.token());
        auto const resigned = co_await watch.next(5s, asio::use_awaitable);
        BOOST_TEST((resigned.what == redisync::leader_change::kind::resigned));
        auto const elected = co_await watch.next(5s, asio::use_awaitable);
        BOOST_TEST(elected.term == second->token());
        BOOST_TEST(elected.value == "there");
        co_await there.resign(*second, asio::use_awaitable);
      }
    }
    co_await other.stop();
  });
}

BOOST_AUTO_TEST_SUITE_END()
