// redisync and a Redisson-protocol client on the same lock name exclude each other, and each one's
// unlock message wakes the other's waiters. The other client is node-redisson, a port of Redisson's
// lock (same scripts, hash layout, channel and unlock message); the Java client cannot be installed
// on this machine.

#include <redisync/redisync.hpp>

#include "process/redis_server.hpp"
#include "support/lock_fixture.hpp"
#include "support/processes.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <cstdlib>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using redisync::process::redis_server;
using redisync::test::child;
using redisync::test::monotonic_ns;
using redisync::test::poll_until;
using redisync::test::temp_dir;

namespace {

// The arguments of `node` for a Redisson-protocol client (test/interop/redisson_peer.mjs).
std::vector<std::string> redisson_peer(std::vector<std::string> args) {
  char const* modules = std::getenv("REDISSON_NODE_MODULES");
  BOOST_TEST_REQUIRE((modules != nullptr && std::filesystem::exists(std::string{modules} + "/node-redisson")),
                     "node-redisson is missing: scripts/test.sh installs it into build/interop");
  args.insert(args.begin(), REDISSON_PEER_PATH);
  return args;
}

std::int64_t event_time(child const& peer, std::string_view kind) {
  auto const found = redisync::test::events(peer.lines(), kind);
  BOOST_TEST_REQUIRE(found.size() == 1u, "no '" << kind << "' event from the Redisson client");
  return std::stoll(std::string{found[0].at("t_ns").as_string()});
}

}  // namespace

BOOST_AUTO_TEST_SUITE(redisson_interop)

BOOST_AUTO_TEST_CASE(a_redisson_holder_excludes_redisync_and_its_unlock_wakes_redisync) {
  redis_server redis;
  temp_dir dir;
  child peer{"node", redisson_peer({"hold", std::to_string(redis.port()), "interop:a", "800"}),
             dir.path / "peer.out"};
  BOOST_TEST_REQUIRE(poll_until([&] { return !peer.lines().empty(); }, 20s));  // it holds the lock
  std::int64_t acquired_at = 0;
  redisync::test::run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    redisync::test::running_client c{ctx, redisync::test::fast_config(redis)};
    auto lock = c->make_lock("interop:a");
    auto none = co_await lock.try_acquire(0ms, asio::use_awaitable);
    BOOST_TEST(!none.has_value());
    auto held = co_await lock.acquire(asio::use_awaitable);  // waits for Redisson's unlock message
    acquired_at = monotonic_ns();
    co_await held.release(asio::use_awaitable);
    co_await c->flush_subscriptions(asio::use_awaitable);
    co_await c.stop();
  });
  BOOST_TEST_REQUIRE(peer.wait(20s));
  BOOST_TEST(peer.exit_code() == 0);
  // Woken by the message, not by the 30 s lease running out.
  auto const after = std::chrono::nanoseconds{acquired_at - event_time(peer, "released")};
  BOOST_TEST((after < 1s), std::chrono::duration_cast<std::chrono::milliseconds>(after).count() << " ms");
  BOOST_TEST(redisync::test::lock_keys(redis).empty());
}

BOOST_AUTO_TEST_CASE(a_redisync_holder_excludes_redisson_and_its_release_wakes_redisson) {
  redis_server redis;
  temp_dir dir;
  std::optional<child> peer;
  // Checked before the client exists, so that a missing node-redisson fails cleanly.
  auto const peer_args = redisson_peer({"contend", std::to_string(redis.port()), "interop:b"});
  std::int64_t released_at = 0;
  redisync::test::run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    redisync::test::running_client c{ctx, redisync::test::fast_config(redis)};
    auto held = co_await c->make_lock("interop:b").acquire(asio::use_awaitable);
    peer.emplace("node", peer_args, dir.path / "peer.out");
    // The Redisson client has tried, failed, and subscribed to the lock's channel to wait.
    auto const waiting = [&] {
      return !redisync::test::events(peer->lines(), "tried").empty() &&
             redisync::test::subscribers_of(redis, "redisson_lock__channel:{interop:b}") > 0;
    };
    auto const deadline = std::chrono::steady_clock::now() + 20s;
    while (!waiting()) {
      BOOST_TEST_REQUIRE((std::chrono::steady_clock::now() < deadline), "the Redisson client never waited");
      co_await redisync::test::sleep_for(5ms);
    }
    BOOST_TEST(!redisync::test::events(peer->lines(), "tried").at(0).at("held").as_bool());
    released_at = monotonic_ns();
    co_await held.release(asio::use_awaitable);
    co_await c.stop();
  }, std::chrono::seconds{60});
  BOOST_TEST_REQUIRE(peer->wait(20s));
  BOOST_TEST(peer->exit_code() == 0);
  auto const after = std::chrono::nanoseconds{event_time(*peer, "locked") - released_at};
  BOOST_TEST((after < 1s), std::chrono::duration_cast<std::chrono::milliseconds>(after).count() << " ms");
  BOOST_TEST(redisync::test::lock_keys(redis).empty());
}

BOOST_AUTO_TEST_SUITE_END()
