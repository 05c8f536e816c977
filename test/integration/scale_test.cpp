// At scale, against a real redis-server: healthy connections are kept, a reconnect or a message
// wakes one waiter per lock, a missing script is loaded once, no key of ours stays without an
// expiry, and renewals go out in bounded batches.

#include <redisync/redisync.hpp>

#include "support/connection_fixture.hpp"
#include "support/lock_fixture.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

namespace asio = boost::asio;
using namespace redisync::test::lock_names;
using redisync::test::command_calls;
using redisync::test::wait_until;

namespace {

// Starts `n` acquires of `lock` that wait; `done` counts those that completed.
void start_waiters(redisync::client& c, std::string const& lock, int n, int& done) {
  for (int i = 0; i < n; ++i) {
    c.make_lock(lock).acquire([&done](error_code, held h) {
      ++done;
      if (h) h.release(asio::detached);
    });
  }
}


// Server commands in plain functions: GCC 12 miscompiles an initializer_list inside a coroutine.
std::int64_t pttl(redis_server const& redis, std::string const& key) {
  return redis.command({"PTTL", key}).integer();
}

bool exists(redis_server const& redis, std::string const& key) {
  return redis.command({"EXISTS", key}).integer() == 1;
}

std::uint64_t server_micros(redis_server const& redis) {
  auto const now = redis.command({"TIME"});
  return std::stoull(std::string{now.elements()[0].text()}) * 1000000 + std::stoull(std::string{now.elements()[1].text()});
}

void set(redis_server const& redis, std::string const& key, std::string const& value) {
  redis.command({"SET", key, value});
}

std::vector<std::string> keys_without_expiry(redis_server const& redis) {
  std::vector<std::string> out;
  auto const keys = redis.command({"KEYS", "*"});
  for (auto const& key : keys.elements()) {
    if (pttl(redis, std::string{key.text()}) == -1) out.emplace_back(key.text());
  }
  return out;
}

std::string const counter_key = "redisson_lock_token:{expiring}";

}  // namespace

BOOST_AUTO_TEST_SUITE(at_scale)

BOOST_AUTO_TEST_CASE(an_idle_client_holding_a_lock_makes_no_reconnect_in_60_s) {
  redis_server redis;
  run_async(
      [&](asio::io_context& ctx) -> asio::awaitable<void> {
        auto cfg = redisync::test::fast_config(redis);
        cfg.health_check_interval = 500ms;  // 120 checks in the minute
        running_client c{ctx, cfg};
        auto h = co_await c->make_lock("idle").acquire(asio::use_awaitable);
        auto const connects = c->metrics().connects;
        co_await redisync::test::sleep_for(60s);
        BOOST_TEST(c->metrics().connects == connects);
        BOOST_TEST((h.status() == redisync::hold_status::held));
        co_await h.release(asio::use_awaitable);
        co_await c.stop();
      },
      std::chrono::seconds{120});
}

BOOST_AUTO_TEST_CASE(after_a_reconnect_each_lock_with_waiters_is_tried_once_not_by_every_waiter) {
  redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    // No timer may send an attempt in the window measured: the head waiter sleeps until the
    // holder's lease could end and the others until the poll cap, both far beyond the test.
    auto holder_cfg = redisync::test::fast_config(redis);
    holder_cfg.watchdog_lease = std::chrono::minutes{10};
    running_client holder{ctx, holder_cfg};
    auto cfg = redisync::test::fast_config(redis);
    cfg.client_name = "waiters";
    cfg.wait_poll_cap = std::chrono::minutes{10};
    running_client waiters{ctx, cfg};
    std::vector<held> holds;
    int done = 0;
    for (int l = 0; l < 10; ++l) {
      holds.push_back(co_await holder->make_lock("herd-" + std::to_string(l)).acquire(asio::use_awaitable));
      start_waiters(*waiters, "herd-" + std::to_string(l), 1000, done);
    }
    co_await wait_until([&] { return waiters->metrics().waiters == 10000; }, 60s);
    co_await wait_until([&] { return redisync::test::subscribed_channels(redis) == 10; }, 30s);
    // Settled: each waiter's first attempt and each head's attempt after its subscription have
    // reached Redis. One still in flight at the kill would be retried, and counted below.
    co_await wait_until([&] { return command_calls(redis, "hexists") >= 10000 + 10; }, 30s);
    auto const attempts_before = command_calls(redis, "hexists");
    auto const connects = waiters->metrics().connects;
    redisync::test::kill_client(redis, "waiters");
    co_await wait_until([&] { return waiters->metrics().connects > connects; }, 30s);
    co_await redisync::test::sleep_for(300ms);  // the herd, if any, would have come by now
    // One attempt per lock (each finds the lock taken: HEXISTS inside the script), not 10,000; and
    // at most one more per lock, the retry of a head's attempt that was on the wire at the kill
    // (a busy machine gave the heads a few attempts more than their first ones before it).
    auto const after = command_calls(redis, "hexists") - attempts_before;
    BOOST_TEST_MESSAGE(after << " attempts after the reconnect for 10 locks of 1,000 waiters");
    BOOST_TEST(after <= 2 * 10);
    for (auto& h : holds) co_await h.release(asio::use_awaitable);
    co_await wait_until([&] { return done == 10000; }, 120s);
    co_await waiters->flush_subscriptions(asio::use_awaitable);
    co_await waiters.stop();
    co_await holder.stop();
  }, std::chrono::seconds{240});
}

BOOST_AUTO_TEST_CASE(a_cold_script_cache_sends_each_script_once_while_thousands_of_callers_wait) {
  redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, redisync::test::fast_config(redis)};
    int done = 0;
    for (int i = 0; i < 10000; ++i) start_waiters(*c, "cold-" + std::to_string(i), 1, done);
    co_await wait_until([&] { return done == 10000; }, 120s);
    // One SCRIPT LOAD of the lock script and none sent whole with EVAL.
    BOOST_TEST(command_calls(redis, "script|load") == 1);
    BOOST_TEST(command_calls(redis, "eval") == 0);
    // After a restart the handshake loads it again before the queued calls go out.
    redis.kill_hard();
    redis.start();
    auto h = co_await c->make_lock("after-restart").acquire(asio::use_awaitable);
    co_await h.release(asio::use_awaitable);
    BOOST_TEST(command_calls(redis, "script|load") == 1);
    BOOST_TEST(command_calls(redis, "eval") == 0);
    co_await c.stop();
  }, std::chrono::seconds{240});
}

BOOST_AUTO_TEST_CASE(the_fencing_counter_expires_after_the_lease_and_tokens_still_grow) {
  redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, redisync::test::fast_config(redis)};
    auto h = co_await c->make_lock("expiring").acquire(300ms, asio::use_awaitable);
    auto const first = h.token();
    co_await h.release(asio::use_awaitable);
    auto const ttl = pttl(redis, counter_key);
    BOOST_TEST((ttl > 0 && ttl <= 300), "PTTL " << ttl);
    co_await wait_until([&] { return !exists(redis, counter_key); }, 5s);
    auto again = co_await c->make_lock("expiring").acquire(300ms, asio::use_awaitable);
    BOOST_TEST(again.token() > first);  // server time went on
    co_await again.release(asio::use_awaitable);
    // A counter ahead of server time (a peer with a fast clock) lives until server time passes it.
    auto const ahead = server_micros(redis) + 5000000;
    set(redis, counter_key, std::to_string(ahead));
    auto fast = co_await c->make_lock("expiring").acquire(300ms, asio::use_awaitable);
    BOOST_TEST(fast.token() == ahead + 1);
    auto const ahead_ttl = pttl(redis, counter_key);
    BOOST_TEST((ahead_ttl > 4000 && ahead_ttl <= 5300 + 1000), "PTTL " << ahead_ttl);
    co_await fast.release(asio::use_awaitable);
    co_await c.stop();
  });
}

BOOST_FIXTURE_TEST_CASE(a_persistent_fencing_counter_never_expires_when_asked_for, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto h = co_await c.make_lock("kept-counter").acquire(300ms, asio::use_awaitable);
    co_await h.release(asio::use_awaitable);
    BOOST_TEST(pttl(redis, "redisson_lock_token:{kept-counter}") == -1);
  }, [](redisync::config& cfg) {
    cfg.persistent_fencing_counter = true;
  });
}

BOOST_FIXTURE_TEST_CASE(renewals_go_out_in_calls_of_at_most_100_holds, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    std::vector<held> holds;
    for (int i = 0; i < 250; ++i) holds.push_back(co_await c.make_lock("batch-" + std::to_string(i)).acquire(asio::use_awaitable));
    co_await wait_until([&] { return c.metrics().renewed_holds >= 500; }, 10s);
    auto const s = c.metrics();
    BOOST_TEST(s.renewal_calls * 100 >= s.renewed_holds);
    BOOST_TEST(s.renewal_calls >= 6u);  // 250 holds: three calls a round at the least
    for (auto& h : holds) co_await h.release(asio::use_awaitable);
    // Nothing of ours is left without an expiry.
    BOOST_TEST(keys_without_expiry(redis).empty());
  }, [](redisync::config& cfg) {
    cfg.watchdog_lease = 900ms;
  });
}

BOOST_AUTO_TEST_SUITE_END()
