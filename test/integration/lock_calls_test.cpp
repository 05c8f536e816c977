// The reentrant lock against a real redis-server: merged lock calls, argument checks, cancellation,
// fencing tokens, queries and contention.

#include <redisync/redisync.hpp>

#include "primitives/fair_lock/protocol.hpp"
#include "primitives/lock_protocol/protocol.hpp"
#include "primitives/rw_lock/protocol.hpp"
#include "support/lock_fixture.hpp"

#include <scripts.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <thread>

namespace asio = boost::asio;
using namespace redisync::test::lock_names;

namespace {

// Busy-waits inside Redis so that commands sent meanwhile queue up unanswered.
void block_redis(redisync::process::redis_server const& redis, int ms) {
  redis.command({"EVAL",
                 "local s = redis.call('time') local t0 = s[1] * 1000 + s[2] / 1000 "
                 "repeat local n = redis.call('time') until n[1] * 1000 + n[2] / 1000 - t0 > tonumber(ARGV[1])",
                 "0", std::to_string(ms)});
}

// Blocks Redis for 300 ms, starts an acquire once Redis is busy, cancels it with `type` 50 ms later
// (the attempt is written but unanswered), and returns what the acquire completed with; nothing if
// it did not complete. Returns after Redis is free again.
asio::awaitable<std::optional<error_code>> acquire_then_cancel(
    redisync::process::redis_server const& redis, redisync::lock& lock, asio::cancellation_type type) {
  std::thread blocker{[&] { block_redis(redis, 300); }};
  co_await redisync::test::sleep_for(50ms);
  asio::cancellation_signal cancel;
  std::optional<error_code> result;
  redisync::test::event completed{co_await asio::this_coro::executor};
  auto on_done = [&](error_code ec, held) {
    result = ec;
    completed.notify();
  };
  lock.acquire(asio::bind_cancellation_slot(cancel.slot(), on_done));
  co_await redisync::test::sleep_for(50ms);
  cancel.emit(type);
  co_await completed.wait(10s);
  blocker.join();
  co_return result;
}

// Starts `lock.acquire()` for every lock at once and waits for all of them.
asio::awaitable<std::vector<std::tuple<error_code, held>>> acquire_all(
    std::vector<redisync::lock>& locks) {
  std::vector<std::tuple<error_code, held>> results(locks.size());
  std::size_t done = 0;
  redisync::test::event all_done{co_await asio::this_coro::executor};
  for (std::size_t i = 0; i < locks.size(); ++i) {
    auto on_done = [&, i](error_code ec, held h) {
      results[i] = {ec, std::move(h)};
      if (++done == locks.size()) all_done.notify();
    };
    locks[i].acquire(on_done);
  }
  BOOST_TEST_REQUIRE(co_await all_done.wait(10s));
  co_return results;
}

// A first lock call loads the scripts on a fresh server (EVALSHA fails with NOSCRIPT, EVAL loads).
asio::awaitable<void> load_scripts(asio::io_context& ctx, redisync::process::redis_server const& redis) {
  running_client c{ctx, redisync::test::fast_config(redis)};
  auto h = co_await c->make_lock("load-scripts").acquire(asio::use_awaitable);
  co_await h.release(asio::use_awaitable);
  co_await c.stop();
}

// Checks that `lock` came back held, by its owner alone once, and releases it.
asio::awaitable<void> expect_held_then_release(redisync::process::redis_server const& redis,
                                               redisync::lock const& lock,
                                               std::tuple<error_code, held>& result) {
  auto& [ec, h] = result;
  BOOST_TEST_REQUIRE(!ec, lock.name() << ": " << ec.message());
  BOOST_TEST(redisync::test::hget_count(redis, lock.name(), lock.owner_id()) == 1);
  co_await h.release(asio::use_awaitable);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(reentrant_lock_calls)

BOOST_AUTO_TEST_CASE(lock_calls_queued_together_go_to_redis_as_one_script_call) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    co_await load_scripts(ctx, redis);
    auto const calls_before = redisync::test::command_calls(redis, "evalsha");
    running_client c{ctx, redisync::test::fast_config(redis)};
    std::vector<redisync::lock> locks;
    for (int i = 0; i < 10; ++i) locks.push_back(c->make_lock("together-" + std::to_string(i)));
    // Made before the connection is up, the acquires wait in its queue and go out together.
    auto results = co_await acquire_all(locks);
    BOOST_TEST(redisync::test::command_calls(redis, "evalsha") - calls_before == 1);
    for (std::size_t i = 0; i < locks.size(); ++i) {
      // Each lock's own token (the calls share one TIME read, so locks may share a token value).
      auto const& [ec, h] = results[i];
      if (!ec) {
        BOOST_TEST(redis.command({"GET", "redisson_lock_token:{" + locks[i].name() + "}"}).text() ==
                   std::to_string(h.token()));
      }
      co_await expect_held_then_release(redis, locks[i], results[i]);
    }
    redisync::test::expect_nothing_left(redis);
    co_await c.stop();
  });
}

BOOST_FIXTURE_TEST_CASE(merged_lock_calls_on_a_server_without_the_script_load_it_and_all_succeed, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    std::vector<redisync::lock> locks;
    for (int i = 0; i < 10; ++i) locks.push_back(c.make_lock("fresh-" + std::to_string(i)));
    // The merged EVALSHA fails with NOSCRIPT for every call in it; each call tries again.
    auto results = co_await acquire_all(locks);
    for (std::size_t i = 0; i < locks.size(); ++i) {
      co_await expect_held_then_release(redis, locks[i], results[i]);
    }
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_AUTO_TEST_CASE(a_key_of_the_wrong_type_fails_only_its_own_call_in_a_merged_script_call) {
  redisync::process::redis_server redis;
  redis.command({"SET", "merged-3", "precious"});
  redis.command({"HSET", "redisson_lock_token:{merged-5}", "x", "1"});
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    co_await load_scripts(ctx, redis);
    auto const calls_before = redisync::test::command_calls(redis, "evalsha");
    running_client c{ctx, redisync::test::fast_config(redis)};
    std::vector<redisync::lock> locks;
    for (int i = 0; i < 8; ++i) locks.push_back(c->make_lock("merged-" + std::to_string(i)));
    auto results = co_await acquire_all(locks);
    // One merged call, and a second try of each failed acquire to report (merged or not).
    BOOST_TEST(redisync::test::command_calls(redis, "evalsha") - calls_before <= 3);
    for (std::size_t i = 0; i < locks.size(); ++i) {
      if (i == 3 || i == 5) {
        auto const& ec = std::get<error_code>(results[i]);
        BOOST_TEST((ec == error::wrong_type), "lock " << i << ": " << ec.message());
        continue;
      }
      co_await expect_held_then_release(redis, locks[i], results[i]);
    }
    BOOST_TEST(redis.command({"GET", "merged-3"}).text() == "precious");
    BOOST_TEST(redis.command({"EXISTS", "merged-5"}).integer() == 0);
    BOOST_TEST(c->metrics().holds == 0u);
    redisync::test::expect_nothing_left(redis, {"merged-3"});
    co_await c.stop();
  });
}

BOOST_FIXTURE_TEST_CASE(invalid_arguments_are_rejected_before_any_io, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    co_await c.make_lock("warm").is_locked(asio::use_awaitable);
    auto const written = c.metrics().round_trips;
    auto empty = c.make_lock("");
    auto [e1, h1] = co_await empty.acquire(tuple_awaitable);
    BOOST_TEST((e1 == error::invalid_argument));
    auto lock = c.make_lock("args");
    auto [e2, h2] = co_await lock.acquire(0ms, tuple_awaitable);
    BOOST_TEST((e2 == error::invalid_argument));
    auto [e3, h3] = co_await lock.acquire(-5ms, tuple_awaitable);
    BOOST_TEST((e3 == error::invalid_argument));
    auto [e4, h4] = co_await lock.try_acquire(-1ms, tuple_awaitable);
    BOOST_TEST((e4 == error::invalid_argument));
    auto [e5, h5] = co_await lock.try_acquire(std::chrono::hours{24 * 365 * 3}, tuple_awaitable);
    BOOST_TEST((e5 == error::invalid_argument));
    // A lease shorter than the drift margin is lost before its reply comes; a year is the longest.
    for (auto lease : {1ms, redisync::shortest_lease - 1ms, std::chrono::milliseconds{std::chrono::hours{24 * 365}} + 1ms}) {
      auto [ec, h] = co_await lock.acquire(lease, tuple_awaitable);
      BOOST_TEST((ec == error::invalid_argument), lease.count());
    }
    auto [e6] = co_await empty.release(tuple_awaitable);
    BOOST_TEST((e6 == error::invalid_argument));
    BOOST_CHECK_THROW(c.make_owner("has space"), boost::system::system_error);
    BOOST_CHECK_THROW(c.make_owner(""), boost::system::system_error);
    BOOST_TEST(c.metrics().round_trips == written);
  });
}

BOOST_AUTO_TEST_CASE(a_client_configuration_out_of_range_is_rejected_at_construction) {
  asio::io_context ctx;
  auto const rejected = [&](auto change) {
    redisync::config cfg;
    change(cfg);
    try {
      redisync::client c{ctx.get_executor(), cfg};
    } catch (boost::system::system_error const& e) {
      return e.code() == error::invalid_argument;
    }
    return false;
  };
  BOOST_TEST(rejected([](auto& cfg) { cfg.reply_spin = -1us; }));
  BOOST_TEST(rejected([](auto& cfg) { cfg.reply_spin = 11ms; }));
  BOOST_TEST(rejected([](auto& cfg) { cfg.watchdog_lease = 0ms; }));
  BOOST_TEST(rejected([](auto& cfg) { cfg.watchdog_lease = 9ms; }));
  BOOST_TEST(rejected([](auto& cfg) { cfg.watchdog_tick = cfg.watchdog_lease / 2; }));
  BOOST_TEST(rejected([](auto& cfg) { cfg.client_name = "two words"; }));
  BOOST_TEST(!rejected([](auto& cfg) { cfg.reply_spin = 0us; }));
  BOOST_TEST(!rejected([](auto& cfg) { cfg.reply_spin = 10ms; }));
  ctx.run();  // the accepted clients' stops
}

BOOST_AUTO_TEST_CASE(cancelling_a_waiting_acquire_leaves_no_hold_and_no_subscription) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    using namespace asio::experimental::awaitable_operators;
    running_client c{ctx, redisync::test::fast_config(redis)};
    auto holder = co_await c->make_lock("wait-cancel").acquire(asio::use_awaitable);
    auto waiter = c->make_lock("wait-cancel");
    asio::steady_timer timer{ctx, 100ms};
    auto outcome = co_await (waiter.acquire(asio::use_awaitable) || timer.async_wait(asio::use_awaitable));
    BOOST_TEST(outcome.index() == 1u);  // the timer won; the acquire was cancelled
    BOOST_TEST(c->metrics().waiters == 0u);
    co_await holder.release(asio::use_awaitable);
    co_await c->flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
    BOOST_TEST(c->metrics().holds == 0u);
    co_await c.stop();
  });
}

BOOST_FIXTURE_TEST_CASE(a_total_cancellation_while_the_first_attempt_runs_ends_the_acquire, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto holder = co_await c.make_lock("total-cancel").acquire(asio::use_awaitable);
    auto waiter = c.make_lock("total-cancel");
    // Redis is busy for 300 ms: the attempt is written, and a written command ignores `total`.
    auto const result = co_await acquire_then_cancel(redis, waiter, asio::cancellation_type::total);
    BOOST_TEST_REQUIRE(result.has_value());
    BOOST_TEST((*result == asio::error::operation_aborted));
    BOOST_TEST(c.metrics().waiters == 0u);
    BOOST_TEST(redisync::test::hget_count(redis, "total-cancel", waiter.owner_id()) == 0);
    co_await holder.release(asio::use_awaitable);
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_FIXTURE_TEST_CASE(a_grant_that_arrives_after_the_caller_gave_up_is_released, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto lock = c.make_lock("late-grant");
    co_await lock.is_locked(asio::use_awaitable);  // connected
    // Redis is busy for 300 ms: the acquire is written but its reply comes after the cancel.
    auto const result = co_await acquire_then_cancel(redis, lock, asio::cancellation_type::terminal);
    BOOST_TEST_REQUIRE(result.has_value());
    BOOST_TEST((*result == asio::error::operation_aborted));
    // The same owner can acquire again only after the late grant was undone.
    auto again = co_await lock.acquire(asio::use_awaitable);
    BOOST_TEST(redisync::test::hget_count(redis, "late-grant", lock.owner_id()) == 1);
    co_await again.release(asio::use_awaitable);
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_FIXTURE_TEST_CASE(fencing_tokens_grow_with_every_fresh_hold, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    // A counter Redisson counted up from 1 is far below the server time in microseconds.
    redis.command({"SET", "redisson_lock_token:{tokens}", "42"});
    std::uint64_t last = 1'000'000'000'000'000;
    for (int i = 0; i < 50; ++i) {
      auto h = co_await c.make_lock("tokens").acquire(asio::use_awaitable);
      BOOST_TEST(h.token() > last);
      BOOST_TEST(redis.command({"GET", "redisson_lock_token:{tokens}"}).text() == std::to_string(h.token()));
      last = h.token();
      co_await h.release(asio::use_awaitable);
    }
    // A counter set far in the future (e.g. by a peer with a fast clock) is still exceeded.
    redis.command({"SET", "redisson_lock_token:{tokens}", "9000000000000000"});
    auto h = co_await c.make_lock("tokens").acquire(asio::use_awaitable);
    BOOST_TEST(h.token() == 9000000000000001u);
    BOOST_TEST(redis.command({"GET", "redisson_lock_token:{tokens}"}).text() == "9000000000000001");
    co_await h.release(asio::use_awaitable);
  });
}

BOOST_FIXTURE_TEST_CASE(queries_report_the_lock_state, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto lock = c.make_lock("query");
    BOOST_TEST(!(co_await lock.is_locked(asio::use_awaitable)));
    BOOST_TEST(!(co_await lock.remaining_lease(asio::use_awaitable)).has_value());
    auto h = co_await lock.acquire(5s, asio::use_awaitable);
    BOOST_TEST(co_await lock.is_locked(asio::use_awaitable));
    auto left = co_await lock.remaining_lease(asio::use_awaitable);
    BOOST_TEST_REQUIRE(left.has_value());
    BOOST_TEST((*left > 4s && *left <= 5s));
    BOOST_TEST(co_await c.make_lock("query").hold_count(asio::use_awaitable) == 0);
    BOOST_TEST(co_await c.make_lock("query").force_release(asio::use_awaitable));
    BOOST_TEST(!(co_await lock.force_release(asio::use_awaitable)));
    auto [ec] = co_await h.release(tuple_awaitable);
    BOOST_TEST((ec == error::lease_lost));
  });
}

BOOST_FIXTURE_TEST_CASE(deferred_operations_outlive_the_handles_they_were_made_from, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    // Each operation is made from a temporary owner or lock handle and started after it is gone.
    auto acquire = c.new_owner().lock("deferred").acquire();
    auto h = co_await std::move(acquire)(asio::use_awaitable);
    BOOST_TEST(h.is_held());
    auto is_locked = c.make_lock("deferred").is_locked();
    BOOST_TEST(co_await std::move(is_locked)(asio::use_awaitable));
    auto count = c.new_owner().lock("deferred").hold_count();
    BOOST_TEST(co_await std::move(count)(asio::use_awaitable) == 0);
    // A release made from a guard that is destroyed (releasing its level) before it starts.
    auto release = h.release();
    { held gone = std::move(h); }
    auto [ec] = co_await std::move(release)(tuple_awaitable);
    BOOST_TEST((ec == error::not_held), ec.message());
    auto is_free = c.make_lock("deferred").is_locked();
    BOOST_TEST(!(co_await std::move(is_free)(asio::use_awaitable)));
  });
}

BOOST_FIXTURE_TEST_CASE(many_tasks_contending_on_one_lock_never_overlap, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    int inside = 0, max_inside = 0, done = 0;
    redisync::test::event all_done{ctx.get_executor()};
    auto longest_wait = std::chrono::steady_clock::duration{};
    auto worker = [&]() -> asio::awaitable<void> {
      auto lock = c.make_lock("crowd");
      for (int i = 0; i < 25; ++i) {
        auto const asked = std::chrono::steady_clock::now();
        auto h = co_await lock.acquire(asio::use_awaitable);
        longest_wait = std::max(longest_wait, std::chrono::steady_clock::now() - asked);
        max_inside = std::max(max_inside, ++inside);
        redisync::resp::request get;
        get.push("INCR", "crowd-counter");
        co_await c.exec(std::move(get), asio::use_awaitable);
        --inside;
        co_await h.release(asio::use_awaitable);
      }
      if (++done == 16) all_done.notify();
    };
    for (int i = 0; i < 16; ++i) asio::co_spawn(ctx, worker(), asio::detached);
    BOOST_TEST_REQUIRE(co_await all_done.wait(60s));
    BOOST_TEST(max_inside == 1);
    // A lost wake-up would show as a wait of the 30 s lease, the bound every wait falls back on.
    BOOST_TEST((longest_wait < 10s), "a wait took " << std::chrono::duration_cast<std::chrono::milliseconds>(longest_wait).count() << " ms");
    BOOST_TEST(redis.command({"GET", "crowd-counter"}).text() == "400");
    BOOST_TEST(c.metrics().handoffs > 0u);
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis, {"crowd-counter"});
  });
}

// The script call of a release made again after a change of master (lock_release::make_again):
// the last level of `field` on `name`, for the hold of `token`.
redisync::resp::value release_made_again(redisync::process::redis_server const& redis, redisync::lock_kind kind,
                                         std::string const& name, std::string const& field, std::uint64_t token) {
  namespace lp = redisync::detail::lock_protocol;
  namespace rw = redisync::detail::rw_protocol;
  std::string const retry = lp::retry_argument(1, token);
  switch (kind) {
    case redisync::lock_kind::fair:
      return redis.command({"EVAL", std::string{redisync::detail::scripts::fair_calls.source}, "3", name,
                            redisync::detail::fair_protocol::queue_key_of(name), lp::token_key_of(name), "release",
                            field, "30000", lp::channel_of(name), retry, "", "", "", "client", "alive:", "2000",
                            "1000"});
    case redisync::lock_kind::write:
      return redis.command({"EVAL", std::string{redisync::detail::scripts::rw_calls.source}, "4", name,
                            rw::timeout_base_of(name), rw::marks_key_of(name), lp::token_key_of(name),
                            "write-release", field, "30000", rw::channel_of(name), retry, "", "", ""});
    default:
      return redis.command({"EVAL", std::string{redisync::detail::scripts::lock_calls.source}, "2", name,
                            lp::token_key_of(name), "release-with", field, "30000", lp::channel_of(name), retry, "",
                            ""});
  }
}

// A release made again after a change of master frees the hold it was made for, and never the
// owner's next one: that grant can reach the new master before the release does (seen in a slot
// migration, where the owner's new hold was freed 13 ms after its grant and another owner took
// the lock). The lock's counter tells the two apart.
BOOST_FIXTURE_TEST_CASE(a_release_made_again_frees_the_hold_it_names_and_never_the_owners_next_one, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto const me = c.new_owner();
    struct side {
      redisync::lock lock;
      redisync::lock_kind kind;
      std::string field;
    };
    std::vector<side> sides{{me.lock("again-plain"), redisync::lock_kind::reentrant, me.id()},
                            {me.fair_lock("again-fair"), redisync::lock_kind::fair, me.id()},
                            {me.read_write_lock("again-rw").write(), redisync::lock_kind::write, me.id() + ":write"}};
    for (auto& s : sides) {
      auto const name = s.lock.name();
      auto first = co_await s.lock.acquire(asio::use_awaitable);
      auto const first_token = first.token();
      co_await first.release(asio::use_awaitable);
      auto next = co_await s.lock.acquire(asio::use_awaitable);
      BOOST_TEST_REQUIRE(next.token() > first_token);
      // Made again for the first hold: the level there is the next one's, and it stays.
      auto const stale = release_made_again(redis, s.kind, name, s.field, first_token);
      BOOST_TEST((stale.kind() == redisync::resp::type::integer && stale.integer() == -2), name);
      BOOST_TEST(redis.command({"HGET", name, s.field}).text() == "1", name);
      BOOST_TEST((next.status() == hold_status::held), name);
      // Made again for the hold that is there (its release lost with the old master): freed.
      auto const current = release_made_again(redis, s.kind, name, s.field, next.token());
      BOOST_TEST((current.kind() == redisync::resp::type::integer && current.integer() == 0), name);
      BOOST_TEST(redis.command({"EXISTS", name}).integer() == 0, name);
      auto [ec] = co_await next.release(tuple_awaitable);
      BOOST_TEST((ec == error::lease_lost), name << ": " << ec.message());
    }
  });
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(levels_left_by_a_lost_release)

// A release acknowledged by a master that then stopped being master leaves the owner's level on
// its successor. The owner's next acquire must not re-enter that level: its release would free
// only the level it knows of, and the one left would keep the lock held by no one for a lease
// (seen in two Sentinel failovers under load: no grant for 10,013 ms). An acquire by an owner that
// holds nothing of the name here takes such a level over as a fresh hold (count 1, a new token),
// whatever its kind; a nested acquire still re-enters.
BOOST_FIXTURE_TEST_CASE(a_fresh_acquire_takes_over_a_level_a_lost_release_left_and_its_release_frees_the_lock,
                        lock_env) {
  namespace rw = redisync::detail::rw_protocol;
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto const me = c.new_owner();
    struct side {
      redisync::lock lock;
      std::string field;
      std::vector<std::string> stale;  // the hash as the lost release left it
    };
    std::vector<side> sides{
        {me.lock("left-plain"), me.id(), {me.id(), "2"}},
        {me.fair_lock("left-fair"), me.id(), {me.id(), "1"}},
        {me.read_write_lock("left-write").write(), me.id() + ":write", {"mode", "write", me.id() + ":write", "2"}},
        {me.read_write_lock("left-read").read(), me.id(), {"mode", "read", me.id(), "2"}}};
    for (auto& s : sides) {
      auto const name = s.lock.name();
      BOOST_TEST_CONTEXT(name) {
        auto first = co_await s.lock.acquire(asio::use_awaitable);
        auto const first_token = first.token();
        co_await first.release(asio::use_awaitable);
        std::vector<std::string> hset{"HSET", name};
        hset.insert(hset.end(), s.stale.begin(), s.stale.end());
        redis.command(hset);
        redis.command({"PEXPIRE", name, "30000"});
        bool const read = s.lock.kind() == redisync::lock_kind::read;
        if (read) {
          for (auto const* level : {"1", "2"}) {
            redis.command({"SET", rw::timeout_base_of(name) + ":" + me.id() + ":rwlock_timeout:" + level, "1", "PX",
                           "30000"});
          }
        }
        auto next = co_await s.lock.acquire(asio::use_awaitable);
        BOOST_TEST(redisync::test::hget_count(redis, name, s.field) == 1);
        if (!read) BOOST_TEST(next.token() > first_token);
        auto nested = co_await s.lock.acquire(asio::use_awaitable);
        BOOST_TEST(redisync::test::hget_count(redis, name, s.field) == 2);
        co_await nested.release(asio::use_awaitable);
        co_await next.release(asio::use_awaitable);
        BOOST_TEST(redis.command({"EXISTS", name}).integer() == 0);
        if (read) {
          BOOST_TEST(redis.command({"EXISTS", rw::timeout_base_of(name) + ":" + me.id() + ":rwlock_timeout:2"})
                         .integer() == 0);
        }
      }
    }
  });
}

// The same for a multi-lock's members: each member's level left by a lost release is taken over.
BOOST_FIXTURE_TEST_CASE(a_fresh_multi_lock_takes_over_the_levels_a_lost_release_left, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto const me = c.new_owner();
    std::vector<redisync::lock> members{me.lock("{left-multi}a"), me.fair_lock("{left-multi}b"),
                                        me.read_write_lock("{left-multi}c").write()};
    std::vector<std::string> const fields{me.id(), me.id(), me.id() + ":write"};
    auto const multi = me.locks(members);
    auto first = co_await multi.acquire(asio::use_awaitable);
    co_await first.release(asio::use_awaitable);
    redis.command({"HSET", "{left-multi}a", me.id(), "1"});
    redis.command({"HSET", "{left-multi}b", me.id(), "2"});
    redis.command({"HSET", "{left-multi}c", "mode", "write", me.id() + ":write", "1"});
    for (auto const& m : members) redis.command({"PEXPIRE", m.name(), "30000"});
    auto next = co_await multi.acquire(asio::use_awaitable);
    for (std::size_t i = 0; i < members.size(); ++i) {
      BOOST_TEST(redisync::test::hget_count(redis, members[i].name(), fields[i]) == 1, members[i].name());
    }
    co_await next.release(asio::use_awaitable);
    for (auto const& m : members) BOOST_TEST(redis.command({"EXISTS", m.name()}).integer() == 0, m.name());
  });
}

BOOST_AUTO_TEST_SUITE_END()
