// redisync demo --cluster | --sentinel: a loopback topology of its own (a 3-master, 3-replica
// cluster, or a master, a replica and 3 Sentinels) and locks through its failures:
//   1. a lock held with the watchdog stays held through a failover, renewed on the new master;
//   2. its waiter gets it after the release, with a greater fencing token;
//   3. after the lock's master is killed, the lock can be taken again soon after the topology
//      promoted a replica (Redis decides when that is: the client can only follow), with a fencing
//      token above every earlier one.
// Exits 0 only if every check held.

#include "cli/common/common.hpp"
#include "cli/lab/demo/demo_report.hpp"
#include "cli/lab/demo/demo_topology.hpp"
#include "testbed/redis_cluster.hpp"
#include "testbed/redis_sentinel.hpp"

#include <redisync/redisync.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <optional>
#include <thread>

namespace redisync::cli {

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

// What the demo does to the topology.
struct topology_faults {
  std::string url;
  std::function<void(std::string const& lock)> failover;  // returns once it is over
  std::function<void(std::string const& lock)> kill;      // SIGKILL of the lock's master, at once
  // The node the topology says serves the lock (blocking; it may throw while the topology settles).
  std::function<std::string(std::string const& lock)> serving;
};

// How long after the topology promoted a replica the client must hold the lock again: a map or
// master reload (every 250 ms while a master is down) and a try, on a noisy machine.
constexpr std::chrono::milliseconds follow_bound{3000};
constexpr std::chrono::seconds topology_patience{30};

asio::awaitable<void> sleep(std::chrono::milliseconds d) {
  asio::steady_timer t{co_await asio::this_coro::executor, d};
  co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
}

// Runs `f` (a fixture call that blocks until the topology settled) on a thread of its own, so that
// renewals and waiters go on meanwhile.
asio::awaitable<void> off_thread(std::function<void()> f) {
  std::atomic<bool> done{false};
  std::exception_ptr failure;
  std::thread worker{[&] {
    try {
      f();
    } catch (...) {
      failure = std::current_exception();
    }
    done = true;
  }};
  while (!done) co_await sleep(50ms);
  worker.join();
  if (failure) std::rethrow_exception(failure);
}

// A hold through a failover of its master: A keeps it, B waiting gets it once A lets go, with a
// greater token. Returns the last token granted.
asio::awaitable<std::uint64_t> through_a_failover(asio::io_context& ctx, client& c, topology_faults& faults,
                                                  demo_report& report, std::string const& name, owner const& a,
                                                  owner const& b) {
  auto first = co_await a.lock(name).acquire(asio::use_awaitable);
  auto const first_node = c.node_of(name);
  report.say("owner A holds {} on {} (token {}, lease 3 s, renewed by the watchdog)", name, first_node,
             first.token());
  // B's wait may outlast this function (if it never gets the lock): what it learns is shared.
  struct waited {
    std::optional<held> hold;
    boost::system::error_code error;
  };
  auto const got = std::make_shared<waited>();
  auto waiter = [got, lock = b.lock(name)]() mutable -> asio::awaitable<void> {
    auto [ec, h] = co_await lock.acquire(asio::as_tuple(asio::use_awaitable));
    got->error = ec;
    if (!ec) got->hold = std::move(h);
  };
  asio::co_spawn(ctx, waiter, asio::detached);
  auto& second = got->hold;
  auto const& waiter_error = got->error;
  report.say("owner B waits for it; failing the lock's master over to its replica");
  std::string serving_port;
  co_await off_thread([&] {
    faults.failover(name);
    serving_port = faults.serving(name);
  });
  // The client follows by itself (its next session asks the Sentinels, or its map is loaded
  // again): the address it names is the new master's once it did.
  auto const follow_until = std::chrono::steady_clock::now() + follow_bound;
  while (!c.node_of(name).ends_with(":" + serving_port) && std::chrono::steady_clock::now() < follow_until) {
    co_await sleep(50ms);
  }
  report.say("failed over: the lock is on {} now; waiting past the lease", c.node_of(name));
  co_await sleep(4s);
  report.record("a hold survives a failover", first.status() == hold_status::held && !second,
                fmt::format("A still holds after 4 s on {} (was {})", c.node_of(name), first_node));
  co_await first.release(asio::use_awaitable);
  for (int i = 0; i < 100 && !second; ++i) co_await sleep(50ms);
  report.record("the waiter gets it with a greater token", second && second->token() > first.token(),
                second ? fmt::format("token {} after {}", second->token(), first.token())
                       : fmt::format("B never got it: {}", waiter_error ? waiter_error.message() : "still waiting"));
  auto const last = second ? second->token() : first.token();
  if (second) co_await second->release(asio::use_awaitable);
  co_return last;
}

// The lock's master killed: a replica takes over, and the lock is held again soon after, with a
// token above `before_kill`.
asio::awaitable<void> through_a_killed_master(asio::io_context& ctx, client& c, topology_faults& faults,
                                              demo_report& report, std::string const& name, owner const& a,
                                              std::uint64_t before_kill) {
  report.say("killing the lock's master with SIGKILL ({} on {})", name, c.node_of(name));
  auto const killed_node = faults.serving(name);
  faults.kill(name);
  auto const killed = std::chrono::steady_clock::now();
  auto since_kill = [killed] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - killed);
  };
  // Watched from a thread of its own (the fixture's calls block) while the client tries the lock.
  std::optional<std::chrono::milliseconds> promoted_after;
  bool watching = true;
  auto watch = [&]() -> asio::awaitable<void> {
    co_await off_thread([&] {
      while (since_kill() < topology_patience) {
        try {
          if (faults.serving(name) != killed_node) {
            promoted_after = since_kill();
            return;
          }
        } catch (std::exception const&) {  // asked a node that is settling: asked again
        }
        std::this_thread::sleep_for(50ms);
      }
    });
    watching = false;
  };
  asio::co_spawn(ctx, watch, asio::detached);
  std::optional<held> after;
  while (!after && since_kill() < topology_patience) {
    auto [ec, h] = co_await a.lock(name).try_acquire(500ms, asio::as_tuple(asio::use_awaitable));
    if (!ec && h) after = std::move(*h);
    if (ec) co_await sleep(50ms);
  }
  auto const took = since_kill();
  while (watching) co_await sleep(50ms);
  auto const followed = promoted_after ? std::max(took - *promoted_after, std::chrono::milliseconds{0}) : took;
  report.record("locks are back after a master dies", after && promoted_after && followed <= follow_bound,
                !promoted_after ? fmt::format("the topology promoted no replica within {} s", topology_patience.count())
                : !after        ? fmt::format("not held again within {} s", topology_patience.count())
                                : fmt::format("a replica was promoted after {} ms; held again on {} {} ms later (bound {} s)",
                                              promoted_after->count(), c.node_of(name), followed.count(),
                                              follow_bound.count() / 1000));
  report.record("fencing tokens keep rising", after && after->token() > before_kill,
                after ? fmt::format("token {} after {}", after->token(), before_kill) : "not held");
  if (after) co_await after->release(asio::use_awaitable);
}

asio::awaitable<int> show(asio::io_context& ctx, topology_faults faults) {
  demo_report report;
  auto cfg = config_from_url(faults.url);
  cfg.watchdog_lease = 3s;  // renewed every second: a failover longer than that would show
  client c{ctx.get_executor(), cfg};
  c.start();
  co_await connect(c);
  std::string const name = "redisync-demo:failover";
  auto a = c.new_owner(), b = c.new_owner();
  auto const before_kill = co_await through_a_failover(ctx, c, faults, report, name, a, b);
  co_await through_a_killed_master(ctx, c, faults, report, name, a, before_kill);
  c.stop();
  co_return report.summary();
}

}  // namespace

int demo_cluster() {
  fmt::print("starting a Redis Cluster of 3 masters and 3 replicas on loopback ports...\n");
  process::redis_cluster cluster;
  fmt::print("cluster ready: {}\n", cluster.url());
  auto master_of = [&](std::string const& lock) { return cluster.master_of_slot(process::key_slot(lock)); };
  asio::io_context ctx{1};
  return run(ctx, show(ctx, {.url = cluster.url(),
                             .failover = [&](std::string const& lock) {
                               cluster.failover(cluster.replica_of(master_of(lock)));
                             },
                             .kill = [&](std::string const& lock) { cluster.node(master_of(lock)).kill_hard(); },
                             .serving = [&](std::string const& lock) {
                               return std::to_string(cluster.node(master_of(lock)).port());
                             }}));
}

int demo_sentinel() {
  fmt::print("starting a master, a replica and 3 Sentinels on loopback ports...\n");
  process::redis_sentinel_set set;
  fmt::print("Sentinel set ready: {}\n", set.url());
  asio::io_context ctx{1};
  return run(ctx, show(ctx, {.url = set.url(),
                             .failover = [&](std::string const&) { set.failover(); },
                             .kill = [&](std::string const&) { set.master().kill_hard(); },
                             .serving = [&](std::string const&) { return std::to_string(set.current_master_port()); }}));
}

}  // namespace redisync::cli
