// The reentrant lock against a real redis-server.

#include <redisync/redisync.hpp>

#include "support/lock_fixture.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/test/unit_test.hpp>

#include <csignal>
#include <set>
#include <thread>

namespace asio = boost::asio;
using boost::system::error_code;
using redisync::error;
using redisync::held;
using redisync::test::running_client;
using redisync::test::run_async;
using namespace std::chrono_literals;

namespace {

constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

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

}  // namespace

BOOST_AUTO_TEST_SUITE(reentrant_lock)

BOOST_AUTO_TEST_CASE(nesting_one_to_five_keeps_the_hold_count_equal_to_hget_and_rejects_over_release) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, redisync::test::fast_config(redis)};
    auto me = c->new_owner();
    auto lock = me.lock("nest");
    std::vector<held> levels;
    std::uint64_t first_token = 0;
    for (int depth = 1; depth <= 5; ++depth) {
      levels.push_back(co_await lock.acquire(asio::use_awaitable));
      if (depth == 1) first_token = levels.back().token();
      BOOST_TEST(levels.back().token() == first_token);  // re-entry keeps the token
      BOOST_TEST(redisync::test::hget_count(redis, "nest", me.id()) == depth);
      BOOST_TEST(co_await lock.hold_count(asio::use_awaitable) == depth);
    }
    for (int depth = 5; depth >= 1; --depth) {
      co_await levels.back().release(asio::use_awaitable);
      levels.pop_back();
      BOOST_TEST(redisync::test::hget_count(redis, "nest", me.id()) == depth - 1);
    }
    BOOST_TEST(!(co_await lock.is_locked(asio::use_awaitable)));
    auto [ec] = co_await lock.release(tuple_awaitable);
    BOOST_TEST((ec == error::not_owner));
    BOOST_TEST(redisync::test::lock_keys(redis).empty());
    co_await c.stop();
  });
}

BOOST_AUTO_TEST_CASE(releasing_a_guard_twice_is_an_error) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, redisync::test::fast_config(redis)};
    auto lock = c->make_lock("twice");
    auto h = co_await lock.acquire(asio::use_awaitable);
    co_await h.release(asio::use_awaitable);
    auto [ec] = co_await h.release(tuple_awaitable);
    BOOST_TEST((ec == error::not_held));
    BOOST_TEST((h.status() == redisync::hold_status::released));
    co_await c.stop();
  });
}

BOOST_AUTO_TEST_CASE(two_owners_in_one_process_exclude_each_other) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, redisync::test::fast_config(redis)};
    auto a = c->new_owner().lock("shared");
    auto b = c->new_owner().lock("shared");
    auto held_a = co_await a.acquire(asio::use_awaitable);
    auto none = co_await b.try_acquire(0ms, asio::use_awaitable);
    BOOST_TEST(!none.has_value());
    // b waits and gets the lock as soon as a lets go.
    std::optional<held> held_b;
    redisync::test::event b_holds{ctx.get_executor()};
    auto wait_for_b = [&]() -> asio::awaitable<void> {
      held_b = co_await b.acquire(asio::use_awaitable);
      b_holds.notify();
    };
    asio::co_spawn(ctx, wait_for_b(), asio::detached);
    BOOST_TEST(!(co_await b_holds.wait(50ms)));  // still excluded while a holds
    co_await held_a.release(asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await b_holds.wait(10s));
    BOOST_TEST(held_b->token() > held_a.token());
    co_await held_b->release(asio::use_awaitable);
    co_await c->flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
    co_await c.stop();
  });
}

BOOST_AUTO_TEST_CASE(a_local_release_hands_the_lock_to_the_next_waiter_without_publishing) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, redisync::test::fast_config(redis)};
    auto a = c->new_owner().lock("handoff");
    auto b = c->new_owner().lock("handoff");
    auto held_a = co_await a.acquire(asio::use_awaitable);
    std::optional<held> held_b;
    redisync::test::event b_holds{ctx.get_executor()};
    auto wait_for_b = [&]() -> asio::awaitable<void> {
      held_b = co_await b.acquire(asio::use_awaitable);
      b_holds.notify();
    };
    asio::co_spawn(ctx, wait_for_b(), asio::detached);
    // b waits in the client's queue once its first try failed; a release now hands over.
    while (c->stats().waiters == 0) co_await asio::post(ctx, asio::use_awaitable);
    auto const publishes = redisync::test::command_calls(redis, "publish");
    co_await held_a.release(asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await b_holds.wait(10s));
    BOOST_TEST(c->stats().handoffs == 1u);
    BOOST_TEST(redisync::test::command_calls(redis, "publish") == publishes);
    BOOST_TEST(redisync::test::hget_count(redis, "handoff", b.owner_id()) == 1);
    BOOST_TEST(held_b->token() > held_a.token());
    co_await held_b->release(asio::use_awaitable);
    co_await c->flush_subscriptions(asio::use_awaitable);
    BOOST_TEST(redisync::test::lock_keys(redis).empty());
    co_await c.stop();
  });
}

BOOST_AUTO_TEST_CASE(an_unlock_message_nobody_waits_for_ends_a_lingering_subscription) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    auto cfg = redisync::test::fast_config(redis);
    cfg.subscription_linger = 60s;
    running_client a{ctx, cfg};
    running_client b{ctx, cfg};
    auto held_b = co_await b->make_lock("unwanted").acquire(asio::use_awaitable);
    std::optional<held> held_a;
    redisync::test::event a_holds{ctx.get_executor()};
    auto wait_in_a = [&]() -> asio::awaitable<void> {
      held_a = co_await a->make_lock("unwanted").acquire(asio::use_awaitable);
      a_holds.notify();
    };
    asio::co_spawn(ctx, wait_in_a(), asio::detached);
    while (a->stats().waiters == 0) co_await asio::post(ctx, asio::use_awaitable);
    co_await held_b.release(asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await a_holds.wait(10s));
    BOOST_TEST(a->stats().subscriptions == 1u);  // lingering: nobody waits any more
    // a's own unlock message reaches a, where nobody waits for it.
    co_await held_a->release(asio::use_awaitable);
    auto const deadline = std::chrono::steady_clock::now() + 5s;
    while (a->stats().subscriptions != 0 && std::chrono::steady_clock::now() < deadline) {
      co_await asio::post(ctx, asio::use_awaitable);
    }
    BOOST_TEST(a->stats().subscriptions == 0u);
    redisync::test::expect_nothing_left(redis);
    co_await a.stop();
    co_await b.stop();
  });
}

// Nests 20 levels of one owner and unwinds them, hopping to another thread of `ex` between levels,
// while another owner of the same client is refused.
void nest_across_threads(asio::any_io_executor ex, redisync::process::redis_server const& redis) {
  redisync::client c{ex, redisync::test::fast_config(redis)};
  c.start();
  auto me = c.new_owner();
  auto other = c.new_owner();
  auto body = [&]() -> asio::awaitable<void> {
    auto lock = me.lock("hops");
    std::vector<held> levels;
    for (int i = 0; i < 20; ++i) {
      levels.push_back(co_await lock.acquire(asio::use_awaitable));
      co_await asio::post(ex, asio::use_awaitable);
    }
    BOOST_TEST(levels.size() == 20u);
    BOOST_TEST(co_await lock.hold_count(asio::use_awaitable) == 20);
    auto none = co_await other.lock("hops").try_acquire(0ms, asio::use_awaitable);
    BOOST_TEST(!none.has_value());
    while (!levels.empty()) {
      co_await levels.back().release(asio::use_awaitable);
      levels.pop_back();
      co_await asio::post(ex, asio::use_awaitable);
    }
  };
  auto done = asio::co_spawn(ex, body(), asio::use_future);
  BOOST_TEST_REQUIRE((done.wait_for(30s) == std::future_status::ready));
  done.get();
  BOOST_TEST(redisync::test::lock_keys(redis).empty());
  c.stop();
}

BOOST_AUTO_TEST_CASE(owner_identity_survives_thread_hops_on_a_thread_pool) {
  redisync::process::redis_server redis;
  asio::thread_pool pool{4};
  nest_across_threads(pool.get_executor(), redis);
  pool.join();
}

BOOST_AUTO_TEST_CASE(owner_identity_survives_thread_hops_on_a_multi_threaded_io_context) {
  redisync::process::redis_server redis;
  asio::io_context io{4};
  auto work = asio::make_work_guard(io);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back([&] { io.run(); });
  nest_across_threads(io.get_executor(), redis);
  work.reset();
  for (auto& t : threads) t.join();
}

BOOST_AUTO_TEST_CASE(try_acquire_returns_within_wait_plus_250_ms) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, redisync::test::fast_config(redis)};
    auto holder = co_await c->make_lock("busy").acquire(asio::use_awaitable);
    auto contender = c->make_lock("busy");
    for (auto wait : {0ms, 100ms, 400ms}) {
      auto const start = std::chrono::steady_clock::now();
      auto result = co_await contender.try_acquire(wait, asio::use_awaitable);
      auto const took = std::chrono::steady_clock::now() - start;
      BOOST_TEST(!result.has_value());
      BOOST_TEST(took >= wait);
      BOOST_TEST((took < wait + 250ms), "waited " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count());
    }
    co_await holder.release(asio::use_awaitable);
    co_await c->flush_subscriptions(asio::use_awaitable);
    BOOST_TEST(redisync::test::subscribed_channels(redis) == 0u);
    co_await c.stop();
  });
}

BOOST_AUTO_TEST_CASE(a_fixed_lease_expires_without_a_watchdog_and_the_hold_reports_the_loss) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, redisync::test::fast_config(redis)};
    auto a = c->make_lock("lease");
    auto h = co_await a.acquire(300ms, asio::use_awaitable);
    auto const ttl = redis.command({"PTTL", "lease"}).integer();
    BOOST_TEST((ttl > 0 && ttl <= 300));
    BOOST_TEST((h.valid_until() <= std::chrono::steady_clock::now() + 300ms));
    auto [ec] = co_await h.wait_lost(tuple_awaitable);
    BOOST_TEST((ec == error::lease_lost));
    BOOST_TEST((h.status() == redisync::hold_status::lost));
    BOOST_TEST((std::chrono::steady_clock::now() >= h.valid_until()));
    // Someone else takes it at once; the late release of the first owner changes nothing.
    auto b = c->make_lock("lease");
    auto hb = co_await b.try_acquire(1s, asio::use_awaitable);
    BOOST_TEST_REQUIRE(hb.has_value());
    auto [release_ec] = co_await h.release(tuple_awaitable);
    BOOST_TEST((release_ec == error::lease_lost));
    auto [handle_ec] = co_await a.release(tuple_awaitable);
    BOOST_TEST((handle_ec == error::not_owner));
    BOOST_TEST(redisync::test::hget_count(redis, "lease", b.owner_id()) == 1);
    co_await hb->release(asio::use_awaitable);
    co_await c->flush_subscriptions(asio::use_awaitable);
    co_await c.stop();
  });
}

BOOST_AUTO_TEST_CASE(the_watchdog_keeps_a_lock_alive_for_ten_leases) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    auto cfg = redisync::test::fast_config(redis);
    cfg.watchdog_lease = 300ms;
    running_client c{ctx, cfg};
    auto lock = c->make_lock("kept");
    auto h = co_await lock.acquire(asio::use_awaitable);
    auto contender = c->make_lock("kept");
    auto const start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < 3s) {
      auto r = co_await contender.try_acquire(0ms, asio::use_awaitable);
      BOOST_TEST_REQUIRE(!r.has_value());
      BOOST_TEST((h.status() == redisync::hold_status::held));
      co_await redisync::test::sleep_for(100ms);
    }
    BOOST_TEST(c->stats().renewals >= 8u);
    BOOST_TEST((h.valid_until() > std::chrono::steady_clock::now()));
    co_await h.release(asio::use_awaitable);
    BOOST_TEST(redisync::test::lock_keys(redis).empty());
    co_await c.stop();
  });
}

BOOST_AUTO_TEST_CASE(a_deleted_owner_field_fires_the_loss_signal_within_one_renewal_period) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    auto cfg = redisync::test::fast_config(redis);
    cfg.watchdog_lease = 600ms;
    running_client c{ctx, cfg};
    auto h = co_await c->make_lock("stolen").acquire(asio::use_awaitable);
    redis.command({"DEL", "stolen"});
    auto const start = std::chrono::steady_clock::now();
    auto [ec] = co_await h.wait_lost(tuple_awaitable);
    BOOST_TEST((ec == error::lease_lost));
    BOOST_TEST((std::chrono::steady_clock::now() - start < 600ms / 3 + 200ms));
    co_await c.stop();
  });
}

BOOST_AUTO_TEST_CASE(failing_renewals_make_the_hold_uncertain_and_then_lost_at_its_deadline) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    auto cfg = redisync::test::fast_config(redis);
    cfg.watchdog_lease = 1500ms;
    cfg.health_check_interval = 100ms;
    running_client c{ctx, cfg};
    auto h = co_await c->make_lock("unreachable").acquire(asio::use_awaitable);
    redis.send_signal(SIGSTOP);  // the server stops answering; the connection is declared dead
    bool saw_uncertain = false;
    while (h.status() != redisync::hold_status::lost) {
      if (h.status() == redisync::hold_status::uncertain) saw_uncertain = true;
      BOOST_TEST_REQUIRE((std::chrono::steady_clock::now() < h.valid_until() + 1s));
      co_await redisync::test::sleep_for(10ms);
    }
    auto const lost_at = std::chrono::steady_clock::now();
    redis.send_signal(SIGCONT);
    BOOST_TEST(saw_uncertain);
    BOOST_TEST((lost_at >= h.valid_until()));
    auto [ec] = co_await h.wait_lost(tuple_awaitable);
    BOOST_TEST((ec == error::lease_lost));
    co_await c.stop();
  });
}

BOOST_AUTO_TEST_CASE(with_lock_cancels_the_body_when_the_lease_is_lost) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    auto cfg = redisync::test::fast_config(redis);
    cfg.watchdog_lease = 300ms;
    running_client c{ctx, cfg};
    auto lock = c->make_lock("body");
    bool body_saw_cancellation = false;
    auto body = [&](held& h) -> asio::awaitable<void> {
      BOOST_TEST(h.is_held());
      redis.command({"DEL", "body"});  // the lock vanishes under the body
      asio::steady_timer forever{co_await asio::this_coro::executor, 30s};
      auto [ec] = co_await forever.async_wait(tuple_awaitable);
      body_saw_cancellation = ec == asio::error::operation_aborted;
    };
    auto const start = std::chrono::steady_clock::now();
    try {
      co_await redisync::with_lock(lock, body);
      BOOST_TEST(false, "with_lock should throw lease_lost");
    } catch (boost::system::system_error const& e) {
      BOOST_TEST((e.code() == error::lease_lost));
    }
    BOOST_TEST(body_saw_cancellation);
    BOOST_TEST((std::chrono::steady_clock::now() - start < 5s));
    // A body that finishes gets its result and the lock is released.
    int const answer = co_await redisync::with_lock(lock, [](held&) -> asio::awaitable<int> { co_return 42; });
    BOOST_TEST(answer == 42);
    BOOST_TEST(redisync::test::lock_keys(redis).empty());
    co_await c.stop();
  });
}

BOOST_AUTO_TEST_CASE(destroying_a_guard_that_holds_releases_the_lock) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, redisync::test::fast_config(redis)};
    auto lock = c->make_lock("scoped");
    {
      auto h = co_await lock.acquire(asio::use_awaitable);
      BOOST_TEST(redis.command({"EXISTS", "scoped"}).integer() == 1);
    }
    auto other = co_await c->make_lock("scoped").try_acquire(2s, asio::use_awaitable);
    BOOST_TEST_REQUIRE(other.has_value());
    co_await other->release(asio::use_awaitable);
    co_await c->flush_subscriptions(asio::use_awaitable);
    BOOST_TEST(redisync::test::lock_keys(redis).empty());
    co_await c.stop();
  });
}

BOOST_AUTO_TEST_CASE(an_io_context_destroyed_while_an_acquire_waits_frees_the_acquire) {
  redisync::process::redis_server redis;
  auto marker = std::make_shared<int>(0);
  std::weak_ptr<int> const watch = marker;
  {
    asio::io_context ctx;
    redisync::client c{ctx.get_executor(), redisync::test::fast_config(redis)};
    c.start();
    std::optional<held> holder;
    c.new_owner().lock("abandoned").acquire([&](error_code, held h) { holder = std::move(h); });
    while (!holder) ctx.run_one();
    auto waiter = c.new_owner().lock("abandoned");
    waiter.acquire([m = std::move(marker)](error_code, held) {});
    while (redisync::test::subscribed_channels(redis) == 0) ctx.run_for(1ms);
    ctx.run_for(100ms);  // the waiter tries again and goes to sleep
    BOOST_TEST(c.stats().waiters == 1u);
  }  // the io_context goes with the acquire still asleep
  BOOST_TEST(watch.expired());
}

BOOST_AUTO_TEST_CASE(a_non_owner_release_changes_nothing_and_publishes_nothing) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, redisync::test::fast_config(redis)};
    auto a = c->make_lock("mine");
    auto h = co_await a.acquire(asio::use_awaitable);
    auto const before = redis.command({"HGETALL", "mine"});
    auto const ttl = redis.command({"PTTL", "mine"}).integer();
    auto const publishes = redisync::test::command_calls(redis, "publish");
    auto [ec] = co_await c->make_lock("mine").release(tuple_awaitable);
    BOOST_TEST((ec == error::not_owner));
    auto [ec2] = co_await c->make_owner("someone:else").lock("mine").release(tuple_awaitable);
    BOOST_TEST((ec2 == error::not_owner));
    BOOST_TEST((redis.command({"HGETALL", "mine"}) == before));
    BOOST_TEST(redis.command({"PTTL", "mine"}).integer() <= ttl);
    BOOST_TEST(redisync::test::command_calls(redis, "publish") == publishes);
    co_await h.release(asio::use_awaitable);
    co_await c.stop();
  });
}

BOOST_AUTO_TEST_CASE(a_key_of_the_wrong_type_gives_a_typed_error_and_stays_untouched) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, redisync::test::fast_config(redis)};
    redis.command({"SET", "not-a-lock", "precious"});
    auto lock = c->make_lock("not-a-lock");
    auto [ec, h] = co_await lock.acquire(tuple_awaitable);
    BOOST_TEST((ec == error::wrong_type));
    auto [rec] = co_await lock.release(tuple_awaitable);
    BOOST_TEST((rec == error::wrong_type));
    auto [fec, forced] = co_await lock.force_release(tuple_awaitable);
    BOOST_TEST((fec == error::wrong_type));
    auto [hec, count] = co_await lock.hold_count(tuple_awaitable);
    BOOST_TEST((hec == error::wrong_type));
    BOOST_TEST(redis.command({"GET", "not-a-lock"}).text() == "precious");

    // A fencing counter of the wrong type fails the acquire before the lock is touched.
    redis.command({"HSET", "redisson_lock_token:{fenced}", "x", "1"});
    auto [tec, th] = co_await c->make_lock("fenced").acquire(tuple_awaitable);
    BOOST_TEST((tec == error::wrong_type));
    BOOST_TEST(redis.command({"EXISTS", "fenced"}).integer() == 0);
    BOOST_TEST(c->stats().holds == 0u);
    co_await c.stop();
  });
}

namespace {

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

BOOST_AUTO_TEST_CASE(merged_lock_calls_on_a_server_without_the_script_load_it_and_all_succeed) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, redisync::test::fast_config(redis)};
    std::vector<redisync::lock> locks;
    for (int i = 0; i < 10; ++i) locks.push_back(c->make_lock("fresh-" + std::to_string(i)));
    // The merged EVALSHA fails with NOSCRIPT for every call in it; each call tries again.
    auto results = co_await acquire_all(locks);
    for (std::size_t i = 0; i < locks.size(); ++i) {
      co_await expect_held_then_release(redis, locks[i], results[i]);
    }
    redisync::test::expect_nothing_left(redis);
    co_await c.stop();
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
    BOOST_TEST(c->stats().holds == 0u);
    redisync::test::expect_nothing_left(redis, {"merged-3"});
    co_await c.stop();
  });
}

BOOST_AUTO_TEST_CASE(invalid_arguments_are_rejected_before_any_io) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, redisync::test::fast_config(redis)};
    co_await c->make_lock("warm").is_locked(asio::use_awaitable);
    auto const written = c->stats().requests_written;
    auto empty = c->make_lock("");
    auto [e1, h1] = co_await empty.acquire(tuple_awaitable);
    BOOST_TEST((e1 == error::invalid_argument));
    auto lock = c->make_lock("args");
    auto [e2, h2] = co_await lock.acquire(0ms, tuple_awaitable);
    BOOST_TEST((e2 == error::invalid_argument));
    auto [e3, h3] = co_await lock.acquire(-5ms, tuple_awaitable);
    BOOST_TEST((e3 == error::invalid_argument));
    auto [e4, h4] = co_await lock.try_acquire(-1ms, tuple_awaitable);
    BOOST_TEST((e4 == error::invalid_argument));
    auto [e5, h5] = co_await lock.try_acquire(std::chrono::hours{24 * 365 * 3}, tuple_awaitable);
    BOOST_TEST((e5 == error::invalid_argument));
    auto [e6] = co_await empty.release(tuple_awaitable);
    BOOST_TEST((e6 == error::invalid_argument));
    BOOST_CHECK_THROW(c->make_owner("has space"), boost::system::system_error);
    BOOST_CHECK_THROW(c->make_owner(""), boost::system::system_error);
    BOOST_TEST(c->stats().requests_written == written);
    co_await c.stop();
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
    BOOST_TEST(c->stats().waiters == 0u);
    co_await holder.release(asio::use_awaitable);
    co_await c->flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
    BOOST_TEST(c->stats().holds == 0u);
    co_await c.stop();
  });
}

BOOST_AUTO_TEST_CASE(a_total_cancellation_while_the_first_attempt_runs_ends_the_acquire) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, redisync::test::fast_config(redis)};
    auto holder = co_await c->make_lock("total-cancel").acquire(asio::use_awaitable);
    auto waiter = c->make_lock("total-cancel");
    // Redis is busy for 300 ms: the attempt is written, and a written command ignores `total`.
    auto const result = co_await acquire_then_cancel(redis, waiter, asio::cancellation_type::total);
    BOOST_TEST_REQUIRE(result.has_value());
    BOOST_TEST((*result == asio::error::operation_aborted));
    BOOST_TEST(c->stats().waiters == 0u);
    BOOST_TEST(redisync::test::hget_count(redis, "total-cancel", waiter.owner_id()) == 0);
    co_await holder.release(asio::use_awaitable);
    co_await c->flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
    co_await c.stop();
  });
}

BOOST_AUTO_TEST_CASE(a_grant_that_arrives_after_the_caller_gave_up_is_released) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, redisync::test::fast_config(redis)};
    auto lock = c->make_lock("late-grant");
    co_await lock.is_locked(asio::use_awaitable);  // connected
    // Redis is busy for 300 ms: the acquire is written but its reply comes after the cancel.
    auto const result = co_await acquire_then_cancel(redis, lock, asio::cancellation_type::terminal);
    BOOST_TEST_REQUIRE(result.has_value());
    BOOST_TEST((*result == asio::error::operation_aborted));
    // The same owner can acquire again only after the late grant was undone.
    auto again = co_await lock.acquire(asio::use_awaitable);
    BOOST_TEST(redisync::test::hget_count(redis, "late-grant", lock.owner_id()) == 1);
    co_await again.release(asio::use_awaitable);
    co_await c->flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
    co_await c.stop();
  });
}

BOOST_AUTO_TEST_CASE(fencing_tokens_grow_with_every_fresh_hold) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, redisync::test::fast_config(redis)};
    // A counter Redisson counted up from 1 is far below the server time in microseconds.
    redis.command({"SET", "redisson_lock_token:{tokens}", "42"});
    std::uint64_t last = 1'000'000'000'000'000;
    for (int i = 0; i < 50; ++i) {
      auto h = co_await c->make_lock("tokens").acquire(asio::use_awaitable);
      BOOST_TEST(h.token() > last);
      BOOST_TEST(redis.command({"GET", "redisson_lock_token:{tokens}"}).text() == std::to_string(h.token()));
      last = h.token();
      co_await h.release(asio::use_awaitable);
    }
    // A counter set far in the future (e.g. by a peer with a fast clock) is still exceeded.
    redis.command({"SET", "redisson_lock_token:{tokens}", "9000000000000000"});
    auto h = co_await c->make_lock("tokens").acquire(asio::use_awaitable);
    BOOST_TEST(h.token() == 9000000000000001u);
    BOOST_TEST(redis.command({"GET", "redisson_lock_token:{tokens}"}).text() == "9000000000000001");
    co_await h.release(asio::use_awaitable);
    co_await c.stop();
  });
}

BOOST_AUTO_TEST_CASE(queries_report_the_lock_state) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, redisync::test::fast_config(redis)};
    auto lock = c->make_lock("query");
    BOOST_TEST(!(co_await lock.is_locked(asio::use_awaitable)));
    BOOST_TEST(!(co_await lock.remaining_lease(asio::use_awaitable)).has_value());
    auto h = co_await lock.acquire(5s, asio::use_awaitable);
    BOOST_TEST(co_await lock.is_locked(asio::use_awaitable));
    auto left = co_await lock.remaining_lease(asio::use_awaitable);
    BOOST_TEST_REQUIRE(left.has_value());
    BOOST_TEST((*left > 4s && *left <= 5s));
    BOOST_TEST(co_await c->make_lock("query").hold_count(asio::use_awaitable) == 0);
    BOOST_TEST(co_await c->make_lock("query").force_release(asio::use_awaitable));
    BOOST_TEST(!(co_await lock.force_release(asio::use_awaitable)));
    auto [ec] = co_await h.release(tuple_awaitable);
    BOOST_TEST((ec == error::lease_lost));
    co_await c.stop();
  });
}

BOOST_AUTO_TEST_CASE(many_tasks_contending_on_one_lock_never_overlap) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, redisync::test::fast_config(redis)};
    int inside = 0, max_inside = 0, done = 0;
    redisync::test::event all_done{ctx.get_executor()};
    auto longest_wait = std::chrono::steady_clock::duration{};
    auto worker = [&]() -> asio::awaitable<void> {
      auto lock = c->make_lock("crowd");
      for (int i = 0; i < 25; ++i) {
        auto const asked = std::chrono::steady_clock::now();
        auto h = co_await lock.acquire(asio::use_awaitable);
        longest_wait = std::max(longest_wait, std::chrono::steady_clock::now() - asked);
        max_inside = std::max(max_inside, ++inside);
        redisync::resp::request get;
        get.push("INCR", "crowd-counter");
        co_await c->exec(std::move(get), asio::use_awaitable);
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
    BOOST_TEST(c->stats().handoffs > 0u);
    co_await c->flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis, {"crowd-counter"});
    co_await c.stop();
  });
}

BOOST_AUTO_TEST_SUITE_END()
