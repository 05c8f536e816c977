// client::metrics() against a real redis-server: acquires counted by primitive and outcome, wait and
// hold times in their histograms, losses by cause, renewals, connections, traffic and script
// loads, names counted by group only when asked, and a multi-lock's acquire counted once.

#include <redisync/redisync.hpp>

#include "support/lock_fixture.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <array>
#include <cmath>
#include <map>

namespace asio = boost::asio;
using namespace redisync::test::lock_names;
using redisync::acquire_outcome;
using redisync::loss_cause;
using redisync::primitive;

namespace {

// The kinds with a hold of their own, each taken once in the first test.
constexpr std::array holding_kinds{primitive::fair_lock, primitive::read_lock, primitive::write_lock,
                                   primitive::permits};

// Out of the coroutines: GCC 12 mishandles braced lists of string literals in a coroutine frame.
std::vector<std::string> names_in_groups() { return {"orders:1", "orders:2", "users:7", "plain", "carts:3"}; }
std::vector<std::string> multi_names() { return {"m:multi:a", "m:multi:b"}; }
std::map<std::string, std::uint64_t> acquires_expected_by_group() { return {{"orders", 2}, {"users", 1}, {"other", 2}}; }

asio::awaitable<void> take_and_release(redisync::lock l) {
  auto h = co_await l.acquire(asio::use_awaitable);
  co_await h.release(asio::use_awaitable);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(client_metrics)

BOOST_FIXTURE_TEST_CASE(acquires_are_counted_by_primitive_and_outcome, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto const before = c.metrics();
    BOOST_TEST(before.of(primitive::lock).wait.count == 0);
    auto const a = c.new_owner();
    auto const b = c.new_owner();
    auto h = co_await a.lock("m:lock").acquire(asio::use_awaitable);
    auto const none = co_await b.lock("m:lock").try_acquire(0ms, asio::use_awaitable);
    BOOST_TEST(!none.has_value());
    co_await h.release(asio::use_awaitable);
    auto f = co_await a.fair_lock("m:fair").acquire(asio::use_awaitable);
    co_await f.release(asio::use_awaitable);
    auto r = co_await a.read_write_lock("m:rw").read().acquire(asio::use_awaitable);
    co_await r.release(asio::use_awaitable);
    auto w = co_await a.read_write_lock("m:rw").write().acquire(asio::use_awaitable);
    co_await w.release(asio::use_awaitable);
    auto const p = a.permits("m:permits");
    co_await p.try_set_permits(2, asio::use_awaitable);
    auto ph = co_await p.acquire(1, asio::use_awaitable);
    co_await ph.release(asio::use_awaitable);
    auto const s = a.semaphore("m:sem");
    co_await s.try_set_permits(1, asio::use_awaitable);
    co_await s.acquire(1, asio::use_awaitable);
    co_await s.release(1, asio::use_awaitable);

    auto const m = c.metrics();
    BOOST_TEST(m.of(primitive::lock).acquired(acquire_outcome::acquired) == 1u);
    BOOST_TEST(m.of(primitive::lock).acquired(acquire_outcome::timed_out) == 1u);
    BOOST_TEST(m.of(primitive::lock).wait.count == 2u);
    BOOST_TEST(m.of(primitive::lock).hold.count == 1u);
    for (auto const kind : holding_kinds) {
      BOOST_TEST(m.of(kind).acquired(acquire_outcome::acquired) == 1u, to_string(kind));
      BOOST_TEST(m.of(kind).hold.count == 1u, to_string(kind));
    }
    BOOST_TEST(m.of(primitive::semaphore).acquired(acquire_outcome::acquired) == 1u);
    BOOST_TEST(m.of(primitive::semaphore).hold.count == 0u);  // a Redisson semaphore keeps no hold
    BOOST_TEST(m.holds == 0u);
    BOOST_TEST(m.connects == 1u);
    BOOST_TEST(m.connections_up == 1u);
    BOOST_TEST(m.round_trips > before.round_trips);
    BOOST_TEST(m.by_group.empty());
  });
}

BOOST_FIXTURE_TEST_CASE(a_wait_and_a_hold_land_in_the_buckets_of_their_durations, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto holder = c.new_owner().lock("m:time");
    auto h = co_await holder.acquire(asio::use_awaitable);
    // Released 300 ms after the grant: the waiter waits at least that long.
    asio::steady_timer later{ctx, 300ms};
    auto release_later = [&]() -> asio::awaitable<void> {
      co_await later.async_wait(asio::use_awaitable);
      co_await h.release(asio::use_awaitable);
    };
    asio::co_spawn(ctx, release_later(), asio::detached);
    auto w = co_await c.new_owner().lock("m:time").acquire(asio::use_awaitable);
    co_await w.release(asio::use_awaitable);

    auto const lock = c.metrics().of(primitive::lock);
    BOOST_TEST(lock.wait.count == 2u);
    BOOST_TEST(lock.hold.count == 2u);
    BOOST_TEST(lock.wait.sum_s >= 0.29);
    BOOST_TEST(lock.hold.sum_s >= 0.29);
    auto const at_or_below = [](redisync::duration_histogram const& hist, double bound) {
      for (std::size_t i = 0; i < hist.upper_bounds_s.size(); ++i) {
        if (hist.upper_bounds_s[i] >= bound) return hist.cumulative_counts[i];
      }
      return std::uint64_t{0};
    };
    // One wait and one hold of about 300 ms, above the 250 ms bound; the other of each far below.
    BOOST_TEST(at_or_below(lock.wait, 0.25) == 1u);
    BOOST_TEST(at_or_below(lock.hold, 0.25) == 1u);
    BOOST_TEST(lock.wait.cumulative_counts.back() == 2u);
    BOOST_TEST(std::isinf(lock.wait.upper_bounds_s.back()));
  });
}

BOOST_FIXTURE_TEST_CASE(losses_are_counted_by_cause, lock_env) {
  run(
      [&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
        // The key deleted under its holder: the next renewal finds it gone.
        auto gone = co_await c.make_lock("m:gone").acquire(asio::use_awaitable);
        redis.command({"DEL", "m:gone"});
        co_await gone.wait_lost(asio::use_awaitable);
        // Force-released by this client.
        auto deleted = co_await c.make_lock("m:deleted").acquire(asio::use_awaitable);
        co_await c.make_lock("m:deleted").force_release(asio::use_awaitable);
        co_await deleted.wait_lost(asio::use_awaitable);

        auto const m = c.metrics();
        auto const& lock = m.of(primitive::lock);
        BOOST_TEST(lock.lost_by(loss_cause::gone) == 1u);
        BOOST_TEST(lock.lost_by(loss_cause::deleted) == 1u);
        BOOST_TEST(lock.lost_by(loss_cause::expired) == 0u);
        BOOST_TEST(lock.hold.count == 2u);
        BOOST_TEST(m.renewal_calls >= 1u);  // the one that found "m:gone" gone, at least
        BOOST_TEST(m.holds == 0u);
      },
      [](redisync::config& cfg) { cfg.watchdog_lease = 300ms; });
}

BOOST_FIXTURE_TEST_CASE(a_multi_lock_that_waits_for_a_member_counts_one_multi_lock_acquire_and_no_lock_acquire,
                        lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto const other = c.new_owner();
    auto const me = c.new_owner();
    auto busy = co_await other.lock("m:multi:b").acquire(asio::use_awaitable);
    std::optional<redisync::multi_held> got;
    auto take_both = [&]() -> asio::awaitable<void> {
      got = co_await me.locks(multi_names()).acquire(asio::use_awaitable);
    };
    asio::co_spawn(ctx, take_both(), asio::detached);
    co_await redisync::test::wait_until([&] { return c.metrics().waiters == 1; }, 5s);
    co_await busy.release(asio::use_awaitable);
    co_await redisync::test::wait_until([&] { return got.has_value(); }, 5s);
    BOOST_TEST_REQUIRE(got.has_value());
    co_await got->release(asio::use_awaitable);

    auto const m = c.metrics();
    BOOST_TEST(m.of(primitive::multi_lock).acquired(acquire_outcome::acquired) == 1u);
    BOOST_TEST(m.of(primitive::multi_lock).wait.count == 1u);
    // The other owner's acquire only: the member waited for is part of the multi-lock's acquire.
    BOOST_TEST(m.of(primitive::lock).acquired(acquire_outcome::acquired) == 1u);
    BOOST_TEST(m.of(primitive::lock).wait.count == 1u);
    // Each member's hold counts as a lock's, the other owner's too.
    BOOST_TEST(m.of(primitive::lock).hold.count == 3u);
  });
}

BOOST_FIXTURE_TEST_CASE(a_script_the_server_lost_is_loaded_once_and_counted, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto l = c.make_lock("m:loads");
    co_await take_and_release(l);
    auto const before = c.metrics().script_loads;
    redis.command({"SCRIPT", "FLUSH"});
    co_await take_and_release(l);
    BOOST_TEST(c.metrics().script_loads == before + 1);  // one script carries the lock's acquires and releases
  });
}

BOOST_FIXTURE_TEST_CASE(names_are_counted_by_group_only_when_asked_and_within_the_limit, lock_env) {
  run(
      [&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
        for (auto const& name : names_in_groups()) co_await take_and_release(c.make_lock(name));
        auto const m = c.metrics();
        std::map<std::string, std::uint64_t> acquires;
        for (auto const& g : m.by_group) acquires[g.group] = g.metrics.acquired(acquire_outcome::acquired);
        // "orders" and "users" fit the limit of 3 with "other" (the plain name); "carts" is "other".
        BOOST_TEST(acquires == acquires_expected_by_group());
      },
      [](redisync::config& cfg) {
        cfg.metrics_group_separator = ":";
        cfg.metrics_group_limit = 3;
      });
}

BOOST_AUTO_TEST_SUITE_END()
