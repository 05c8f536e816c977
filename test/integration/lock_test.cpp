// The reentrant lock against a real redis-server.

#include <redisync/redisync.hpp>

#include "support/lock_fixture.hpp"
#include "sync/channels.hpp"

#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/test/unit_test.hpp>

#include <csignal>
#include <thread>

namespace asio = boost::asio;
using namespace redisync::test::lock_names;

BOOST_AUTO_TEST_SUITE(reentrant_lock)

BOOST_FIXTURE_TEST_CASE(nesting_one_to_five_keeps_the_hold_count_equal_to_hget_and_rejects_over_release, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto me = c.new_owner();
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
  });
}

BOOST_FIXTURE_TEST_CASE(releasing_a_guard_twice_is_an_error, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto lock = c.make_lock("twice");
    auto h = co_await lock.acquire(asio::use_awaitable);
    co_await h.release(asio::use_awaitable);
    auto [ec] = co_await h.release(tuple_awaitable);
    BOOST_TEST((ec == error::not_held));
    BOOST_TEST((h.status() == redisync::hold_status::released));
  });
}

BOOST_FIXTURE_TEST_CASE(two_owners_in_one_process_exclude_each_other, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto a = c.new_owner().lock("shared");
    auto b = c.new_owner().lock("shared");
    auto held_a = co_await a.acquire(asio::use_awaitable);
    auto none = co_await b.try_acquire(0ms, asio::use_awaitable);
    BOOST_TEST(!none.has_value());
    // b waits and gets the lock as soon as a lets go.
    redisync::test::background_acquire wait_in_b{ctx, b};
    BOOST_TEST(!(co_await wait_in_b.wait(50ms)));  // still excluded while a holds
    co_await held_a.release(asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await wait_in_b.wait(10s));
    BOOST_TEST_REQUIRE(wait_in_b.result().has_value());
    BOOST_TEST(wait_in_b.result()->token() > held_a.token());
    co_await wait_in_b.result()->release(asio::use_awaitable);
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_FIXTURE_TEST_CASE(a_local_release_hands_the_lock_to_the_next_waiter_without_publishing, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto a = c.new_owner().lock("handoff");
    auto b = c.new_owner().lock("handoff");
    auto held_a = co_await a.acquire(asio::use_awaitable);
    redisync::test::background_acquire wait_in_b{ctx, b};
    // b waits in the client's queue once its first try failed; a release now hands over.
    while (c.metrics().waiters == 0) co_await asio::post(ctx, asio::use_awaitable);
    auto const publishes = redisync::test::command_calls(redis, "publish");
    co_await held_a.release(asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await wait_in_b.wait(10s));
    BOOST_TEST_REQUIRE(wait_in_b.result().has_value());
    BOOST_TEST(c.metrics().handoffs == 1u);
    BOOST_TEST(redisync::test::command_calls(redis, "publish") == publishes);
    BOOST_TEST(redisync::test::hget_count(redis, "handoff", b.owner_id()) == 1);
    BOOST_TEST(wait_in_b.result()->token() > held_a.token());
    co_await wait_in_b.result()->release(asio::use_awaitable);
    co_await c.flush_subscriptions(asio::use_awaitable);
    BOOST_TEST(redisync::test::lock_keys(redis).empty());
  });
}

BOOST_AUTO_TEST_CASE(unlock_messages_nobody_waits_for_end_a_lingering_subscription_after_a_run_of_them) {
  redisync::process::redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    auto cfg = redisync::test::fast_config(redis);
    cfg.subscription_linger = 60s;
    running_client a{ctx, cfg};
    running_client b{ctx, cfg};
    auto held_b = co_await b->make_lock("unwanted").acquire(asio::use_awaitable);
    redisync::test::background_acquire wait_in_a{ctx, a->make_lock("unwanted")};
    while (a->metrics().waiters == 0) co_await asio::post(ctx, asio::use_awaitable);
    co_await held_b.release(asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await wait_in_a.wait(10s));
    BOOST_TEST_REQUIRE(wait_in_a.result().has_value());
    BOOST_TEST(a->metrics().subscriptions == 1u);  // lingering: nobody waits any more
    // Each of a's unlocks sends a message that reaches a, where nobody waits for it; it comes
    // before the release's reply (the script publishes it), so it is handled when the release is.
    co_await wait_in_a.result()->release(asio::use_awaitable);
    auto const run = redisync::detail::sync::channels::unwanted_messages_to_drop;
    for (std::size_t unwanted = 1; unwanted < run; ++unwanted) {
      BOOST_TEST_REQUIRE(a->metrics().subscriptions == 1u, "dropped after " << unwanted << " unwanted messages");
      auto held = co_await a->make_lock("unwanted").acquire(asio::use_awaitable);
      co_await held.release(asio::use_awaitable);
    }
    auto const dropped = [&] { return a->metrics().subscriptions == 0; };
    co_await redisync::test::wait_until(dropped, 5s);
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

// After an OOM, waiters on a free lock stalled ~28.7 s: the lock went without a message they
// heard, and the head slept until the holder's lease would have ended (30 s). It looks again within
// a third of its lease or 1 s.
BOOST_FIXTURE_TEST_CASE(a_waiter_tries_again_within_a_second_when_the_lock_goes_without_a_message, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto holder = co_await c.make_lock("silent").acquire(asio::use_awaitable);  // 30 s watchdog lease
    redisync::test::background_acquire waiter{ctx, c.make_lock("silent")};
    co_await redisync::test::wait_until([&] { return c.metrics().waiters == 1u; }, 5s);
    co_await redisync::test::sleep_for(100ms);  // the waiter's try and its subscription are done
    redis.command({"DEL", "silent"});           // gone, and nobody told
    auto const t0 = std::chrono::steady_clock::now();
    BOOST_TEST_REQUIRE(co_await waiter.wait(5s));
    BOOST_TEST_REQUIRE(waiter.result().has_value());
    BOOST_TEST((std::chrono::steady_clock::now() - t0 < 2500ms));
    co_await waiter.result()->release(asio::use_awaitable);
    auto [ec] = co_await holder.release(tuple_awaitable);  // the old holder finds out
    BOOST_TEST((ec == error::lease_lost), ec.message());
  });
}

BOOST_FIXTURE_TEST_CASE(try_acquire_returns_within_wait_plus_250_ms, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto holder = co_await c.make_lock("busy").acquire(asio::use_awaitable);
    auto contender = c.make_lock("busy");
    for (auto wait : {0ms, 100ms, 400ms}) {
      auto const start = std::chrono::steady_clock::now();
      auto result = co_await contender.try_acquire(wait, asio::use_awaitable);
      auto const took = std::chrono::steady_clock::now() - start;
      BOOST_TEST(!result.has_value());
      BOOST_TEST(took >= wait);
      BOOST_TEST((took < wait + 250ms), "waited " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count());
    }
    co_await holder.release(asio::use_awaitable);
    co_await c.flush_subscriptions(asio::use_awaitable);
    BOOST_TEST(redisync::test::subscribed_channels(redis) == 0u);
  });
}

BOOST_FIXTURE_TEST_CASE(a_fixed_lease_expires_without_a_watchdog_and_the_hold_reports_the_loss, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto a = c.make_lock("lease");
    auto h = co_await a.acquire(300ms, asio::use_awaitable);
    auto const ttl = redis.command({"PTTL", "lease"}).integer();
    BOOST_TEST((ttl > 0 && ttl <= 300));
    BOOST_TEST((h.valid_until() <= std::chrono::steady_clock::now() + 300ms));
    auto [ec, how] = co_await h.wait_lost(tuple_awaitable);
    BOOST_TEST((!ec && how == hold_status::lost));
    BOOST_TEST((h.status() == redisync::hold_status::lost));
    BOOST_TEST((std::chrono::steady_clock::now() >= h.valid_until()));
    // Someone else takes it at once; the late release of the first owner changes nothing.
    auto b = c.make_lock("lease");
    auto hb = co_await b.try_acquire(1s, asio::use_awaitable);
    BOOST_TEST_REQUIRE(hb.has_value());
    auto [release_ec] = co_await h.release(tuple_awaitable);
    BOOST_TEST((release_ec == error::lease_lost));
    auto [handle_ec] = co_await a.release(tuple_awaitable);
    BOOST_TEST((handle_ec == error::not_owner));
    BOOST_TEST(redisync::test::hget_count(redis, "lease", b.owner_id()) == 1);
    co_await hb->release(asio::use_awaitable);
    co_await c.flush_subscriptions(asio::use_awaitable);
  });
}

BOOST_FIXTURE_TEST_CASE(the_watchdog_keeps_a_lock_alive_for_ten_leases, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto lock = c.make_lock("kept");
    auto h = co_await lock.acquire(asio::use_awaitable);
    auto contender = c.make_lock("kept");
    auto const start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < 3s) {
      auto r = co_await contender.try_acquire(0ms, asio::use_awaitable);
      BOOST_TEST_REQUIRE(!r.has_value());
      BOOST_TEST((h.status() == redisync::hold_status::held));
      co_await redisync::test::sleep_for(100ms);
    }
    BOOST_TEST(c.metrics().renewed_holds >= 8u);
    BOOST_TEST((h.valid_until() > std::chrono::steady_clock::now()));
    co_await h.release(asio::use_awaitable);
    BOOST_TEST(redisync::test::lock_keys(redis).empty());
  }, [](redisync::config& cfg) {
    cfg.watchdog_lease = 300ms;
  });
}

BOOST_FIXTURE_TEST_CASE(a_deleted_owner_field_fires_the_loss_signal_within_one_renewal_period, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto h = co_await c.make_lock("stolen").acquire(asio::use_awaitable);
    redis.command({"DEL", "stolen"});
    auto const start = std::chrono::steady_clock::now();
    auto [ec, how] = co_await h.wait_lost(tuple_awaitable);
    BOOST_TEST((!ec && how == hold_status::lost));
    BOOST_TEST((std::chrono::steady_clock::now() - start < 600ms / 3 + 200ms));
  }, [](redisync::config& cfg) {
    cfg.watchdog_lease = 600ms;
  });
}

BOOST_FIXTURE_TEST_CASE(failing_renewals_make_the_hold_uncertain_and_then_lost_at_its_deadline, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto h = co_await c.make_lock("unreachable").acquire(asio::use_awaitable);
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
    auto [ec, how] = co_await h.wait_lost(tuple_awaitable);
    BOOST_TEST((!ec && how == hold_status::lost));
  }, [](redisync::config& cfg) {
    cfg.watchdog_lease = 1500ms;
    cfg.health_check_interval = 100ms;
  });
}

BOOST_FIXTURE_TEST_CASE(with_lock_cancels_the_body_when_the_lease_is_lost, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto lock = c.make_lock("body");
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
  }, [](redisync::config& cfg) {
    cfg.watchdog_lease = 300ms;
  });
}

BOOST_FIXTURE_TEST_CASE(destroying_a_guard_that_holds_releases_the_lock, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto lock = c.make_lock("scoped");
    {
      auto h = co_await lock.acquire(asio::use_awaitable);
      BOOST_TEST(redis.command({"EXISTS", "scoped"}).integer() == 1);
    }
    auto other = co_await c.make_lock("scoped").try_acquire(2s, asio::use_awaitable);
    BOOST_TEST_REQUIRE(other.has_value());
    co_await other->release(asio::use_awaitable);
    co_await c.flush_subscriptions(asio::use_awaitable);
    BOOST_TEST(redisync::test::lock_keys(redis).empty());
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
    BOOST_TEST(c.metrics().waiters == 1u);
  }  // the io_context goes with the acquire still asleep
  BOOST_TEST(watch.expired());
}

BOOST_FIXTURE_TEST_CASE(a_non_owner_release_changes_nothing_and_publishes_nothing, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto a = c.make_lock("mine");
    auto h = co_await a.acquire(asio::use_awaitable);
    auto const before = redis.command({"HGETALL", "mine"});
    auto const ttl = redis.command({"PTTL", "mine"}).integer();
    auto const publishes = redisync::test::command_calls(redis, "publish");
    auto [ec] = co_await c.make_lock("mine").release(tuple_awaitable);
    BOOST_TEST((ec == error::not_owner));
    auto [ec2] = co_await c.make_owner("someone:else").lock("mine").release(tuple_awaitable);
    BOOST_TEST((ec2 == error::not_owner));
    BOOST_TEST((redis.command({"HGETALL", "mine"}) == before));
    BOOST_TEST(redis.command({"PTTL", "mine"}).integer() <= ttl);
    BOOST_TEST(redisync::test::command_calls(redis, "publish") == publishes);
    co_await h.release(asio::use_awaitable);
  });
}

BOOST_FIXTURE_TEST_CASE(a_key_of_the_wrong_type_gives_a_typed_error_and_stays_untouched, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    redis.command({"SET", "not-a-lock", "precious"});
    auto lock = c.make_lock("not-a-lock");
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
    auto [tec, th] = co_await c.make_lock("fenced").acquire(tuple_awaitable);
    BOOST_TEST((tec == error::wrong_type));
    BOOST_TEST(redis.command({"EXISTS", "fenced"}).integer() == 0);
    BOOST_TEST(c.metrics().holds == 0u);
  });
}

BOOST_AUTO_TEST_SUITE_END()
