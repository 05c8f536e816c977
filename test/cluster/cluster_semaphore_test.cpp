// Semaphores and latches on a real 3-master, 3-replica Redis Cluster: leased, fair and Redisson's
// semaphores, on names served by every master; a release (a latch's last count-down) of one client
// wakes the waiter of another over sharded pub/sub, and every key sits in its name's slot, also for
// a latch whose name has braces (Redisson's channel for such a name is in another slot).

#include "testbed/redis_cluster.hpp"
#include "support/cluster_names.hpp"
#include "support/lock_fixture.hpp"

#include <redisync/redisync.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include <memory>
#include <set>

namespace asio = boost::asio;
using namespace redisync::test::lock_names;
using redisync::process::redis_cluster;

namespace {

using redisync::test::name_on;

struct woken {
  explicit woken(asio::any_io_executor ex) : done{std::move(ex)} {}
  redisync::test::event done;
  bool ok = false;
};

// One permit taken in the background; `done` once it is taken (and given back).
std::shared_ptr<woken> wait_for_permit(asio::io_context& ctx, redisync::permits p) {
  auto w = std::make_shared<woken>(ctx.get_executor());
  auto run = [](std::shared_ptr<woken> w, redisync::permits p) -> asio::awaitable<void> {
    auto [ec, h] = co_await p.acquire(1, asio::as_tuple(asio::use_awaitable));
    if (!ec) co_await h.release(asio::use_awaitable);
    w->ok = !ec;
    w->done.notify();
  };
  asio::co_spawn(ctx, run(w, std::move(p)), asio::detached);
  return w;
}

std::shared_ptr<woken> wait_for_semaphore(asio::io_context& ctx, redisync::semaphore s) {
  auto w = std::make_shared<woken>(ctx.get_executor());
  auto run = [](std::shared_ptr<woken> w, redisync::semaphore s) -> asio::awaitable<void> {
    auto [ec] = co_await s.acquire(1, asio::as_tuple(asio::use_awaitable));
    if (!ec) co_await s.release(1, asio::use_awaitable);
    w->ok = !ec;
    w->done.notify();
  };
  asio::co_spawn(ctx, run(w, std::move(s)), asio::detached);
  return w;
}

std::shared_ptr<woken> wait_for_latch(asio::io_context& ctx, redisync::latch l) {
  auto w = std::make_shared<woken>(ctx.get_executor());
  auto run = [](std::shared_ptr<woken> w, redisync::latch l) -> asio::awaitable<void> {
    auto [ec, open] = co_await l.wait(20s, asio::as_tuple(asio::use_awaitable));
    w->ok = !ec && open;
    w->done.notify();
  };
  asio::co_spawn(ctx, run(w, std::move(l)), asio::detached);
  return w;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cluster_semaphores, *boost::unit_test::label("cluster"))

BOOST_AUTO_TEST_CASE(every_semaphore_wakes_another_clients_waiter_on_every_master) {
  redis_cluster cluster;
  auto const cfg = fast_config(cluster.url());
  run_client(cfg, [&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    running_client other{ctx, cfg};
    std::set<std::string> nodes;
    for (std::size_t master = 0; master < 3; ++master) {
      // Leased and fair permits: a 30 s lease, so only the release's message wakes the waiter soon.
      for (bool fair : {false, true}) {
        auto const name = name_on(cluster, master, fair ? "fair-permits-" : "permits-");
        auto const mine = fair ? c.new_owner().fair_permits(name) : c.new_owner().permits(name);
        BOOST_TEST(co_await mine.try_set_permits(1, asio::use_awaitable));
        auto held_now = co_await mine.acquire(1, asio::use_awaitable);
        nodes.insert(c.node_of(name));
        auto const theirs = fair ? other->new_owner().fair_permits(name) : other->new_owner().permits(name);
        auto waiter = wait_for_permit(ctx, theirs);
        auto const waits = [&] { return other->metrics().waiters == 1; };
        co_await redisync::test::wait_until(waits, 5s);
        co_await held_now.release(asio::use_awaitable);
        BOOST_TEST_INFO("permits on " << name << (fair ? " (fair)" : ""));
        BOOST_TEST(co_await waiter->done.wait(3s));
        BOOST_TEST(waiter->ok);
      }
      // Redisson's semaphore polls every second without a message: the bound is below that.
      auto const name = name_on(cluster, master, "semaphore-");
      auto const mine = c.new_owner().semaphore(name);
      co_await mine.try_set_permits(1, asio::use_awaitable);
      co_await mine.acquire(1, asio::use_awaitable);
      auto waiter = wait_for_semaphore(ctx, other->new_owner().semaphore(name));
      auto const waits = [&] { return other->metrics().waiters == 1; };
      co_await redisync::test::wait_until(waits, 5s);
      auto const released = std::chrono::steady_clock::now();
      co_await mine.release(1, asio::use_awaitable);
      BOOST_TEST(co_await waiter->done.wait(3s));
      BOOST_TEST(waiter->ok);
      BOOST_TEST_INFO("semaphore on " << name);
      BOOST_TEST((std::chrono::steady_clock::now() - released < 900ms));
    }
    BOOST_TEST(nodes.size() == 3u);
    co_await other.stop();
  });
}

BOOST_AUTO_TEST_CASE(a_latch_opened_by_one_client_wakes_another_clients_waiters_on_every_master) {
  redis_cluster cluster;
  auto const cfg = fast_config(cluster.url());
  run_client(cfg, [&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    running_client other{ctx, cfg};
    std::vector<std::string> names;
    for (std::size_t master = 0; master < 3; ++master) names.push_back(name_on(cluster, master, "latch-"));
    names.push_back("{braced}latch");
    for (auto const& name : names) {
      auto const mine = c.latch(name);
      BOOST_TEST(co_await mine.try_set_count(1, asio::use_awaitable));
      auto waiter = wait_for_latch(ctx, other->latch(name));
      auto const waits = [&] { return other->metrics().waiters == 1; };
      co_await redisync::test::wait_until(waits, 5s);
      auto const opened = std::chrono::steady_clock::now();
      BOOST_TEST(co_await mine.count_down(asio::use_awaitable) == 0);
      BOOST_TEST_INFO("latch " << name << " on " << c.node_of(name));
      BOOST_TEST(co_await waiter->done.wait(3s));
      BOOST_TEST(waiter->ok);
      // A waiter's own poll comes every second: the bound is below that.
      BOOST_TEST((std::chrono::steady_clock::now() - opened < 900ms));
    }
    co_await other.stop();
  });
}

BOOST_AUTO_TEST_SUITE_END()
