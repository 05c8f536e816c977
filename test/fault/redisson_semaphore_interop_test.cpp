// redisync's semaphore and a Redisson-protocol client on the same name share one count of permits,
// and each one's release wakes the other's waiters. The other client is
// test/interop/redisson_semaphore_peer.mjs, RSemaphore's calls written from the protocol facts (no
// npm package ports it; the Java client cannot be installed on this machine).

#include <redisync/redisync.hpp>

#include "testbed/redis_server.hpp"
#include "support/interop_peers.hpp"
#include "support/lock_fixture.hpp"
#include "support/processes.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <csignal>
#include <cstdlib>

namespace asio = boost::asio;
using namespace redisync::test::lock_names;
using redisync::test::child;
using redisync::test::has_event;
using redisync::test::ms_between;
using redisync::test::only_event;
using redisync::test::t_ns_of;
using redisync::test::monotonic_ns;
using redisync::test::temp_dir;
using redisync::test::wait_until;

namespace {

constexpr auto use_awaitable = asio::use_awaitable;

// The arguments of `node` for a client of Redisson's semaphore protocol.
std::vector<std::string> semaphore_peer(std::vector<std::string> args) {
  return redisync::test::interop_peer("redisson_semaphore_peer.mjs", std::move(args));
}

// A try_acquire started in the background; `done` once it completed, `at_ns` when.
struct background_take {
  explicit background_take(asio::any_io_executor ex) : done{std::move(ex)} {}
  bool taken = false;
  std::int64_t at_ns = 0;
  redisync::test::event done;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(redisson_semaphore_interop)

BOOST_AUTO_TEST_CASE(a_redisync_holder_of_every_permit_keeps_redisson_waiting_and_its_release_wakes_it) {
  redis_server redis;
  temp_dir dir;
  std::string const name = "interop:sc:a";
  // Its poll (5 s) is far longer than the bound below: only redisync's message wakes it in time.
  auto const peer_args = semaphore_peer({"contend", std::to_string(redis.port()), name, "2", "5000"});
  std::optional<child> peer;
  std::int64_t released_at = 0;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, fast_config(redis)};
    auto const sem = c->new_owner().semaphore(name);
    BOOST_TEST(co_await sem.try_set_permits(2, use_awaitable));
    co_await sem.acquire(2, use_awaitable);
    peer.emplace("node", peer_args, dir.path / "peer.out");
    // Tried, subscribed and tried again: asleep until a message or its poll.
    co_await wait_until([&] { return has_event(*peer, "waiting"); }, 20s);
    BOOST_TEST(has_event(*peer, "busy"));
    released_at = monotonic_ns();
    co_await sem.release(2, use_awaitable);
    co_await wait_until([&] { return has_event(*peer, "released"); }, 20s);
    BOOST_TEST(co_await sem.available_permits(use_awaitable) == 2);
    co_await c.stop();
  });
  BOOST_TEST_REQUIRE(peer->wait(20s));
  BOOST_TEST(peer->exit_code() == 0);
  auto const acquired = only_event(*peer, "acquired");
  BOOST_TEST(acquired.at("by").as_string() == "message");
  auto const after = ms_between(released_at, t_ns_of(acquired));
  BOOST_TEST_MESSAGE("Redisson client woken " << after << " ms after redisync's release");
  BOOST_TEST(after < 2000, after << " ms");
  BOOST_TEST(redisync::test::lock_keys(redis, {name}).empty());
}

BOOST_AUTO_TEST_CASE(a_redisson_holder_of_every_permit_keeps_redisync_waiting_and_its_release_wakes_it) {
  redis_server redis;
  temp_dir dir;
  std::string const name = "interop:sc:b";
  auto const peer_args = semaphore_peer({"hold", std::to_string(redis.port()), name, "3", "signal"});
  std::optional<child> peer;
  std::int64_t acquired_at = 0;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, fast_config(redis)};
    auto const sem = c->new_owner().semaphore(name);
    BOOST_TEST(co_await sem.try_set_permits(3, use_awaitable));
    peer.emplace("node", peer_args, dir.path / "peer.out");
    co_await wait_until([&] { return has_event(*peer, "acquired"); }, 20s);
    BOOST_TEST(!co_await sem.try_acquire(1, 0ms, use_awaitable));
    auto const take = std::make_shared<background_take>(ctx.get_executor());
    asio::co_spawn(ctx, sem.try_acquire(3, 10s, use_awaitable), [take](std::exception_ptr e, bool taken) {
      take->at_ns = monotonic_ns();
      take->taken = !e && taken;
      take->done.notify();
    });
    // Waiting on Redisson's channel before the permits come back, so that they come by message.
    co_await wait_until([&] {
      return c->metrics().waiters == 1 && redisync::test::subscribers_of(redis, "redisson_sc:{" + name + "}") > 0;
    }, 20s);
    peer->signal(SIGUSR2);
    BOOST_TEST_REQUIRE(co_await take->done.wait(15s));
    BOOST_TEST(take->taken);
    acquired_at = take->at_ns;
    co_await sem.release(3, use_awaitable);
    BOOST_TEST(co_await sem.available_permits(use_awaitable) == 3);
    co_await c.stop();
  });
  BOOST_TEST_REQUIRE(peer->wait(20s));
  BOOST_TEST(peer->exit_code() == 0);
  auto const released = only_event(*peer, "released");
  // redisync's subscription heard the count: the wake did not depend on its own poll.
  BOOST_TEST(released.at("heard").as_int64() >= 1);
  auto const after = ms_between(t_ns_of(released), acquired_at);
  BOOST_TEST_MESSAGE("redisync woken " << after << " ms after the Redisson client's release");
  BOOST_TEST(after < 2000, after << " ms");
  BOOST_TEST(redisync::test::lock_keys(redis, {name}).empty());
}

BOOST_AUTO_TEST_CASE(both_clients_see_the_permits_the_other_took_and_gave_back) {
  redis_server redis;
  temp_dir dir;
  std::string const name = "interop:sc:c";
  auto const port = std::to_string(redis.port());
  auto const holder_args = semaphore_peer({"hold", port, name, "2", "signal"});
  auto const counter_args = semaphore_peer({"available", port, name});
  std::optional<child> holder;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, fast_config(redis)};
    auto const sem = c->new_owner().semaphore(name);
    BOOST_TEST(co_await sem.try_set_permits(5, use_awaitable));
    holder.emplace("node", holder_args, dir.path / "holder.out");
    co_await wait_until([&] { return has_event(*holder, "acquired"); }, 20s);
    BOOST_TEST(co_await sem.available_permits(use_awaitable) == 3);
    BOOST_TEST(co_await sem.try_acquire(3, 0ms, use_awaitable));
    child counter{"node", counter_args, dir.path / "counter.out"};
    co_await wait_until([&] { return has_event(counter, "available"); }, 20s);
    BOOST_TEST(only_event(counter, "available").at("permits").as_int64() == 0);
    holder->signal(SIGUSR2);
    co_await wait_until([&] { return has_event(*holder, "released"); }, 20s);
    BOOST_TEST(only_event(*holder, "released").at("free").as_int64() == 2);
    BOOST_TEST(co_await sem.available_permits(use_awaitable) == 2);
    co_await sem.release(3, use_awaitable);
    BOOST_TEST(co_await sem.available_permits(use_awaitable) == 5);
    co_await c.stop();
  });
  BOOST_TEST_REQUIRE(holder->wait(20s));
  BOOST_TEST(holder->exit_code() == 0);
  BOOST_TEST(redisync::test::lock_keys(redis, {name}).empty());
}

BOOST_AUTO_TEST_CASE(a_redisson_taker_waits_for_a_missing_count_and_redisyncs_first_permits_wake_it) {
  redis_server redis;
  temp_dir dir;
  std::string const name = "interop:sc:d";
  auto const peer_args = semaphore_peer({"contend", std::to_string(redis.port()), name, "1", "5000"});
  std::optional<child> peer;
  std::int64_t set_at = 0;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, fast_config(redis)};
    auto const sem = c->new_owner().semaphore(name);
    peer.emplace("node", peer_args, dir.path / "peer.out");
    co_await wait_until([&] { return has_event(*peer, "waiting"); }, 20s);
    BOOST_TEST(has_event(*peer, "busy"));  // no string yet: no permits, as in Redisson
    set_at = monotonic_ns();
    BOOST_TEST(co_await sem.try_set_permits(1, use_awaitable));
    co_await wait_until([&] { return has_event(*peer, "released"); }, 20s);
    BOOST_TEST(co_await sem.available_permits(use_awaitable) == 1);
    co_await c.stop();
  });
  BOOST_TEST_REQUIRE(peer->wait(20s));
  BOOST_TEST(peer->exit_code() == 0);
  auto const acquired = only_event(*peer, "acquired");
  BOOST_TEST(acquired.at("by").as_string() == "message");
  auto const after = ms_between(set_at, t_ns_of(acquired));
  BOOST_TEST_MESSAGE("Redisson client woken " << after << " ms after redisync set the permits");
  BOOST_TEST(after < 2000, after << " ms");
  BOOST_TEST(redisync::test::lock_keys(redis, {name}).empty());
}

BOOST_AUTO_TEST_SUITE_END()
