// redisync and a Redisson-protocol client on the same lock name exclude each other, and each one's
// unlock message wakes the other's waiters. For the lock, the other client is node-redisson, a port
// of Redisson's lock (same scripts, hash layout, channel and unlock message); for the read-write
// lock, which no npm package ports, test/interop/redisson_rwlock_peer.mjs, Redisson's scripts
// written from the protocol facts. The Java client cannot be installed on this machine.

#include <redisync/redisync.hpp>

#include "testbed/redis_server.hpp"
#include "support/interop_peers.hpp"
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
using redisync::test::ms_between;
using redisync::test::poll_until;
using redisync::test::temp_dir;

namespace {

// The arguments of `node` for a Redisson-protocol client (test/interop/redisson_peer.mjs).
std::vector<std::string> redisson_peer(std::vector<std::string> args, std::string script = REDISSON_PEER_PATH) {
  char const* modules = std::getenv("REDISSON_NODE_MODULES");
  BOOST_TEST_REQUIRE((modules != nullptr && std::filesystem::exists(std::string{modules} + "/node-redisson")),
                     "node-redisson is missing: scripts/test.sh installs it into build/interop");
  args.insert(args.begin(), std::move(script));
  return args;
}

std::int64_t event_time(child const& peer, std::string_view kind) {
  auto const found = redisync::test::events(peer.lines(), kind);
  BOOST_TEST_REQUIRE(found.size() == 1u, "no '" << kind << "' event from the Redisson client");
  return std::stoll(std::string{found[0].at("t_ns").as_string()});
}

// The arguments of `node` for a client of Redisson's read-write lock protocol.
std::vector<std::string> redisson_rw_peer(std::vector<std::string> args) {
  return redisson_peer(std::move(args), REDISYNC_SOURCE_DIR "/test/interop/redisson_rwlock_peer.mjs");
}

// A Redisson-protocol client holds one side of `name` for 800 ms; redisync's `side` tries at once
// (`shares`: and gets it), then waits for the lock and must be woken by the unlock message.
void redisson_holds_while_redisync_waits(std::string const& held_side, redisync::lock_kind side,
                                         std::string const& name, bool shares) {
  redis_server redis;
  temp_dir dir;
  child peer{"node", redisson_rw_peer({"hold", held_side, std::to_string(redis.port()), name, "800"}),
             dir.path / "peer.out"};
  BOOST_TEST_REQUIRE(poll_until([&] { return !peer.lines().empty(); }, 20s));  // it holds the lock
  std::int64_t acquired_at = 0;
  redisync::test::run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    redisync::test::running_client c{ctx, redisync::test::fast_config(redis)};
    auto rw = c->new_owner().read_write_lock(name);
    auto lock = side == redisync::lock_kind::read ? rw.read() : rw.write();
    auto first = co_await lock.try_acquire(0ms, asio::use_awaitable);
    BOOST_TEST(first.has_value() == shares);
    if (first) co_await first->release(asio::use_awaitable);
    if (shares) {
      // A writer of redisync waits for the Redisson reader instead.
      lock = rw.write();
      BOOST_TEST(!(co_await lock.try_acquire(0ms, asio::use_awaitable)).has_value());
    }
    auto held = co_await lock.acquire(asio::use_awaitable);  // waits for Redisson's unlock message
    acquired_at = monotonic_ns();
    co_await held.release(asio::use_awaitable);
    co_await c->flush_subscriptions(asio::use_awaitable);
    co_await c.stop();
  });
  BOOST_TEST_REQUIRE(peer.wait(20s));
  BOOST_TEST(peer.exit_code() == 0);
  // Woken by the message, not by the 30 s lease running out.
  auto const after = ms_between(event_time(peer, "released"), acquired_at);
  BOOST_TEST(after < 1000, after << " ms");
  BOOST_TEST(redisync::test::lock_keys(redis).empty());
}

// redisync holds `side` of `name`; a Redisson-protocol client of `waiting_side` tries, fails, waits,
// and must be woken by redisync's unlock message.
void redisync_holds_while_redisson_waits(redisync::lock_kind side, std::string const& waiting_side,
                                         std::string const& name) {
  redis_server redis;
  temp_dir dir;
  std::optional<child> peer;
  auto const peer_args = redisson_rw_peer({"contend", waiting_side, std::to_string(redis.port()), name});
  std::int64_t released_at = 0;
  redisync::test::run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    redisync::test::running_client c{ctx, redisync::test::fast_config(redis)};
    auto rw = c->new_owner().read_write_lock(name);
    auto lock = side == redisync::lock_kind::read ? rw.read() : rw.write();
    auto held = co_await lock.acquire(asio::use_awaitable);
    peer.emplace("node", peer_args, dir.path / "peer.out");
    auto const waiting = [&] {
      return !redisync::test::events(peer->lines(), "tried").empty() &&
             redisync::test::subscribers_of(redis, "redisson_rwlock:{" + name + "}") > 0;
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
  auto const after = ms_between(released_at, event_time(*peer, "locked"));
  BOOST_TEST(after < 1000, after << " ms");
  BOOST_TEST(redisync::test::lock_keys(redis).empty());
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

BOOST_AUTO_TEST_CASE(a_redisson_reader_shares_with_redisync_readers_and_its_read_unlock_wakes_a_redisync_writer) {
  redisson_holds_while_redisync_waits("read", redisync::lock_kind::read, "interop:rw:a", true);
}

BOOST_AUTO_TEST_CASE(a_redisson_writer_excludes_redisync_readers_and_its_write_unlock_wakes_them) {
  redisson_holds_while_redisync_waits("write", redisync::lock_kind::read, "interop:rw:b", false);
}

BOOST_AUTO_TEST_CASE(a_redisson_writer_excludes_a_redisync_writer_and_its_write_unlock_wakes_it) {
  redisson_holds_while_redisync_waits("write", redisync::lock_kind::write, "interop:rw:c", false);
}

BOOST_AUTO_TEST_CASE(a_redisync_writer_excludes_a_redisson_reader_and_its_release_wakes_it) {
  redisync_holds_while_redisson_waits(redisync::lock_kind::write, "read", "interop:rw:d");
}

BOOST_AUTO_TEST_CASE(a_redisync_reader_excludes_a_redisson_writer_and_its_last_read_release_wakes_it) {
  redisync_holds_while_redisson_waits(redisync::lock_kind::read, "write", "interop:rw:e");
}

BOOST_AUTO_TEST_SUITE_END()
