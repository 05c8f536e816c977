// redisync's latch and a Redisson-protocol client on the same name share one count, and the last
// count-down of either side wakes the other's waiters. The other client is
// test/interop/redisson_latch_peer.mjs, RCountDownLatch's calls written from the protocol facts
// (no npm package ports it).

#include <redisync/redisync.hpp>

#include "testbed/redis_server.hpp"
#include "support/interop_peers.hpp"
#include "support/latch_waits.hpp"
#include "support/lock_fixture.hpp"
#include "support/processes.hpp"

#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

namespace asio = boost::asio;
using namespace redisync::test::lock_names;
using redisync::test::child;
using redisync::test::has_event;
using redisync::test::monotonic_ns;
using redisync::test::ms_between;
using redisync::test::only_event;
using redisync::test::t_ns_of;
using redisync::test::temp_dir;
using redisync::test::wait_until;

namespace {

constexpr auto use_awaitable = asio::use_awaitable;

std::vector<std::string> latch_peer(std::vector<std::string> args) {
  return redisync::test::interop_peer("redisson_latch_peer.mjs", std::move(args));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(redisson_latch_interop)

BOOST_AUTO_TEST_CASE(redisyncs_last_count_down_wakes_a_redisson_waiter) {
  redis_server redis;
  temp_dir dir;
  std::string const name = "interop:latch:a";
  // Its poll (5 s) is far longer than the bound below: only redisync's message wakes it in time.
  auto const waiter_args = latch_peer({"await", std::to_string(redis.port()), name, "5000"});
  std::optional<child> waiter;
  std::int64_t opened_at = 0;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, fast_config(redis)};
    auto const l = c->latch(name);
    BOOST_TEST(co_await l.try_set_count(2, use_awaitable));
    waiter.emplace("node", waiter_args, dir.path / "waiter.out");
    co_await wait_until([&] { return has_event(*waiter, "waiting"); }, 20s);
    BOOST_TEST(co_await l.count_down(use_awaitable) == 1);
    opened_at = monotonic_ns();
    BOOST_TEST(co_await l.count_down(use_awaitable) == 0);
    co_await c.stop();
  });
  BOOST_TEST_REQUIRE(waiter->wait(20s));
  BOOST_TEST(waiter->exit_code() == 0);
  auto const opened = only_event(*waiter, "opened");
  BOOST_TEST(opened.at("by").as_string() == "message");
  auto const after = ms_between(opened_at, t_ns_of(opened));
  BOOST_TEST_MESSAGE("Redisson client woken " << after << " ms after redisync's last count-down");
  BOOST_TEST(after < 2000, after << " ms");
  BOOST_TEST(redisync::test::lock_keys(redis, {name}).empty());
}

BOOST_AUTO_TEST_CASE(a_redisson_clients_last_count_down_wakes_every_redisync_waiter) {
  redis_server redis;
  temp_dir dir;
  std::string const name = "interop:latch:b";
  std::string const port = std::to_string(redis.port());
  std::optional<child> setter, counter;
  std::vector<std::int64_t> opened_at;  // each waiter's
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    std::vector<std::shared_ptr<redisync::test::background_wait>> waits;  // their timers die with the io_context
    running_client c{ctx, fast_config(redis)};
    auto const l = c->latch(name);
    setter.emplace("node", latch_peer({"set", port, name, "1"}), dir.path / "setter.out");
    BOOST_TEST_REQUIRE(setter->wait(20s));
    BOOST_TEST(only_event(*setter, "set").at("set").as_bool());
    BOOST_TEST(co_await l.count(use_awaitable) == 1);
    for (int i = 0; i < 3; ++i) waits.push_back(redisync::test::wait_in_background(ctx, l, 20s));
    // Listening on Redisson's channel before the count reaches zero, so that the wake comes by
    // message.
    co_await wait_until([&] {
      return c->metrics().waiters == 3 &&
             redisync::test::subscribers_of(redis, "redisson_countdownlatch__channel__{" + name + "}") > 0;
    }, 20s);
    counter.emplace("node", latch_peer({"count-down", port, name}), dir.path / "counter.out");
    for (auto const& w : waits) {
      BOOST_TEST_REQUIRE(co_await w->done.wait(15s));
      BOOST_TEST(w->open);
      opened_at.push_back(monotonic_ns(w->at));
    }
    co_await c.stop();
  });
  BOOST_TEST_REQUIRE(counter->wait(20s));
  auto const counted = only_event(*counter, "counted-down");
  BOOST_TEST(counted.at("left").as_int64() == 0);
  for (auto const at : opened_at) {
    auto const after = ms_between(t_ns_of(counted), at);
    BOOST_TEST_MESSAGE("redisync waiter woken " << after << " ms after the Redisson client's count-down");
    BOOST_TEST(after < 900, after << " ms (a waiter's own poll comes every second)");
  }
  BOOST_TEST(redisync::test::lock_keys(redis, {name}).empty());
}

BOOST_AUTO_TEST_SUITE_END()
