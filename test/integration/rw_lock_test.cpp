// The read-write lock against a real redis-server: sharing and exclusion, Redisson's layout,
// writer preference, downgrade and upgrade, bad releases, the watchdog and fencing (who wakes whom:
// rw_wakeup_test.cpp).

#include <redisync/redisync.hpp>

#include "support/lock_fixture.hpp"
#include "support/rw_lock_helpers.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <memory>
#include <vector>

namespace asio = boost::asio;
using namespace redisync::test::lock_names;
using redisync::test::background_acquire;
using redisync::test::fast_config;
using redisync::test::hget_count;
using redisync::test::sleep_for;
using redisync::test::pttl;

namespace {

std::string timeout_key(std::string const& name, std::string const& owner, int level) {
  return "{" + name + "}:" + owner + ":rwlock_timeout:" + std::to_string(level);
}

std::string mode_of(redis_server const& redis, std::string const& name) {
  auto const v = redis.command({"HGET", name, "mode"});
  return v.is_null() ? "" : std::string{v.text()};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(read_write_lock)

BOOST_FIXTURE_TEST_CASE(readers_share_and_a_writer_excludes_both_ways, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto a = c.new_owner().read_write_lock("rw:share");
    auto b = c.new_owner().read_write_lock("rw:share");
    auto w = c.new_owner().read_write_lock("rw:share");
    auto ra = co_await a.read().acquire(asio::use_awaitable);
    auto rb = co_await b.read().try_acquire(0ms, asio::use_awaitable);
    BOOST_TEST_REQUIRE(rb.has_value());  // readers share
    BOOST_TEST(a.reads());
    BOOST_TEST(!a.writes());
    BOOST_TEST(!(co_await w.write().try_acquire(0ms, asio::use_awaitable)).has_value());
    co_await ra.release(asio::use_awaitable);
    BOOST_TEST(!(co_await w.write().try_acquire(0ms, asio::use_awaitable)).has_value());
    co_await rb->release(asio::use_awaitable);
    auto held = co_await w.write().try_acquire(0ms, asio::use_awaitable);
    BOOST_TEST_REQUIRE(held.has_value());
    BOOST_TEST(w.writes());
    BOOST_TEST(!(co_await a.read().try_acquire(0ms, asio::use_awaitable)).has_value());
    BOOST_TEST(!(co_await a.write().try_acquire(0ms, asio::use_awaitable)).has_value());
    co_await held->release(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_FIXTURE_TEST_CASE(holds_are_written_in_redissons_layout, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto a = c.new_owner().read_write_lock("rw:layout");
    auto b = c.new_owner().read_write_lock("rw:layout");
    auto r1 = co_await a.read().acquire(5000ms, asio::use_awaitable);
    auto r2 = co_await a.read().acquire(5000ms, asio::use_awaitable);
    auto r3 = co_await b.read().acquire(2000ms, asio::use_awaitable);
    BOOST_TEST(mode_of(redis, "rw:layout") == "read");
    BOOST_TEST(hget_count(redis, "rw:layout", a.owner_id()) == 2);
    BOOST_TEST(hget_count(redis, "rw:layout", b.owner_id()) == 1);
    for (int level : {1, 2}) BOOST_TEST(pttl(redis, timeout_key("rw:layout", a.owner_id(), level)) > 4000);
    BOOST_TEST(pttl(redis, timeout_key("rw:layout", b.owner_id(), 1)) > 1000);
    // The hash lives as long as the longest read level.
    BOOST_TEST(pttl(redis, "rw:layout") > 4000);
    co_await r2.release(asio::use_awaitable);
    BOOST_TEST(redis.command({"EXISTS", timeout_key("rw:layout", a.owner_id(), 2)}).integer() == 0);
    co_await r1.release(asio::use_awaitable);
    // Only b's 2 s read is left: the hash follows it down.
    BOOST_TEST(pttl(redis, "rw:layout") <= 2000);
    BOOST_TEST(redis.command({"HEXISTS", "rw:layout", a.owner_id()}).integer() == 0);
    co_await r3.release(asio::use_awaitable);
    BOOST_TEST(redis.command({"EXISTS", "rw:layout"}).integer() == 0);

    auto w = co_await a.write().acquire(asio::use_awaitable);
    BOOST_TEST(mode_of(redis, "rw:layout") == "write");
    BOOST_TEST(hget_count(redis, "rw:layout", a.owner_id() + ":write") == 1);
    BOOST_TEST(co_await a.write().hold_count(asio::use_awaitable) == 1);
    BOOST_TEST(co_await a.read().hold_count(asio::use_awaitable) == 0);
    co_await w.release(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_FIXTURE_TEST_CASE(reads_and_writes_are_reentrant_and_every_fresh_write_gets_a_larger_token, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto rw = c.new_owner().read_write_lock("rw:reenter");
    std::uint64_t last = 0;
    for (int round = 0; round < 3; ++round) {
      auto w1 = co_await rw.write().acquire(asio::use_awaitable);
      auto w2 = co_await rw.write().acquire(asio::use_awaitable);
      BOOST_TEST(w1.token() > last);
      BOOST_TEST(w2.token() == w1.token());  // a nested level of the same hold
      last = w1.token();
      co_await w2.release(asio::use_awaitable);
      co_await w1.release(asio::use_awaitable);
    }
    auto r1 = co_await rw.read().acquire(asio::use_awaitable);
    auto r2 = co_await rw.read().acquire(asio::use_awaitable);
    BOOST_TEST(co_await rw.read().hold_count(asio::use_awaitable) == 2);
    BOOST_TEST(r1.token() == 0u);
    co_await r2.release(asio::use_awaitable);
    co_await r1.release(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_FIXTURE_TEST_CASE(a_writer_may_read_and_keep_reading_after_its_write_but_a_reader_cannot_upgrade, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto rw = c.new_owner().read_write_lock("rw:grade");
    auto other = c.new_owner().read_write_lock("rw:grade");
    auto w = co_await rw.write().acquire(asio::use_awaitable);
    auto r = co_await rw.read().acquire(asio::use_awaitable);  // a read under its own write
    BOOST_TEST(!(co_await other.read().try_acquire(0ms, asio::use_awaitable)).has_value());
    co_await w.release(asio::use_awaitable);  // a downgrade: still reading
    BOOST_TEST(mode_of(redis, "rw:grade") == "read");
    BOOST_TEST((r.status() == hold_status::held));
    auto shared = co_await other.read().try_acquire(0ms, asio::use_awaitable);
    BOOST_TEST_REQUIRE(shared.has_value());
    // An upgrade fails at once, whatever the wait, and changes nothing.
    auto const started = std::chrono::steady_clock::now();
    auto [ec, up] = co_await rw.write().try_acquire(10s, tuple_awaitable);
    BOOST_TEST((ec == error::upgrade_refused), ec.message());
    BOOST_TEST((std::chrono::steady_clock::now() - started < 5s));
    auto [ec2, up2] = co_await rw.write().acquire(tuple_awaitable);
    BOOST_TEST((ec2 == error::upgrade_refused), ec2.message());
    BOOST_TEST(hget_count(redis, "rw:grade", rw.owner_id()) == 1);
    BOOST_TEST(redis.command({"HEXISTS", "rw:grade", rw.owner_id() + ":write"}).integer() == 0);
    co_await r.release(asio::use_awaitable);
    co_await shared->release(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_FIXTURE_TEST_CASE(releasing_the_side_an_owner_does_not_hold_is_not_owner_and_changes_nothing, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto rw = c.new_owner().read_write_lock("rw:side");
    auto w = co_await rw.write().acquire(asio::use_awaitable);
    auto [ec] = co_await rw.read().release(tuple_awaitable);
    BOOST_TEST((ec == error::not_owner), ec.message());
    BOOST_TEST(hget_count(redis, "rw:side", rw.owner_id() + ":write") == 1);
    BOOST_TEST((w.status() == hold_status::held));
    co_await w.release(asio::use_awaitable);
    auto r = co_await rw.read().acquire(asio::use_awaitable);
    auto [ec2] = co_await rw.write().release(tuple_awaitable);
    BOOST_TEST((ec2 == error::not_owner), ec2.message());
    BOOST_TEST(hget_count(redis, "rw:side", rw.owner_id()) == 1);
    co_await r.release(asio::use_awaitable);
    // Bad input of the lock's kind: a lease of zero.
    auto [ec3, none] = co_await rw.read().try_acquire(0ms, 0ms, tuple_awaitable);
    BOOST_TEST((ec3 == error::invalid_argument), ec3.message());
    redis.command({"SET", "rw:string", "x"});
    auto [ec4, none4] = co_await c.new_owner().read_write_lock("rw:string").write().try_acquire(0ms, tuple_awaitable);
    BOOST_TEST((ec4 == error::wrong_type), ec4.message());
    redis.command({"DEL", "rw:string"});
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_FIXTURE_TEST_CASE(a_waiting_writer_gets_the_lock_within_twice_the_longest_read_hold_from_overlapping_readers,
                        lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    constexpr auto hold = 300ms;
    std::vector<std::unique_ptr<running_client>> others;
    for (int i = 0; i < 2; ++i) others.push_back(std::make_unique<running_client>(ctx, fast_config(redis)));
    auto stop = std::make_shared<std::atomic<bool>>(false);
    auto readers_done = std::make_shared<int>(0);
    // 8 readers in overlapping turns without end, on two clients: one of them always reads.
    auto reader = [](redisync::read_write_lock rw, std::chrono::milliseconds offset, std::shared_ptr<std::atomic<bool>> stop,
                     std::shared_ptr<int> done) -> asio::awaitable<void> {
      co_await sleep_for(offset);
      while (!*stop) {
        auto r = co_await rw.read().acquire(asio::use_awaitable);
        co_await sleep_for(hold);
        co_await r.release(asio::use_awaitable);
      }
      ++*done;
    };
    for (int i = 0; i < 8; ++i) {
      auto& client = *others[static_cast<std::size_t>(i % 2)];
      asio::co_spawn(ctx, reader(client->new_owner().read_write_lock("rw:starve"), hold * i / 8, stop, readers_done),
                     asio::detached);
    }
    co_await sleep_for(2 * hold);
    BOOST_TEST(mode_of(redis, "rw:starve") == "read");
    auto writer = c.new_owner().read_write_lock("rw:starve");
    for (int round = 0; round < 3; ++round) {
      auto const asked = std::chrono::steady_clock::now();
      auto w = co_await writer.write().acquire(asio::use_awaitable);
      auto const waited = std::chrono::steady_clock::now() - asked;
      BOOST_TEST((waited < 2 * hold), "round " << round << ": the writer waited "
                                                << std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()
                                                << " ms");
      co_await w.release(asio::use_awaitable);
      co_await sleep_for(hold);
    }
    *stop = true;
    auto const readers_stopped = [&] { return *readers_done == 8; };
    co_await redisync::test::wait_until(readers_stopped, 10s);
    for (auto& o : others) co_await o->stop();
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_FIXTURE_TEST_CASE(a_writer_that_gives_up_takes_its_mark_away_and_readers_go_on, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto r = co_await c.new_owner().read_write_lock("rw:giveup").read().acquire(asio::use_awaitable);
    auto none = co_await c.new_owner().read_write_lock("rw:giveup").write().try_acquire(200ms, asio::use_awaitable);
    BOOST_TEST(!none.has_value());
    co_await c.flush_subscriptions(asio::use_awaitable);
    auto const unmarked = [&] { return redis.command({"EXISTS", "redisync_rwlock_writers:{rw:giveup}"}).integer() == 0; };
    co_await redisync::test::wait_until(unmarked, 2s);
    auto shared = co_await c.new_owner().read_write_lock("rw:giveup").read().try_acquire(0ms, asio::use_awaitable);
    BOOST_TEST(shared.has_value());
    if (shared) co_await shared->release(asio::use_awaitable);
    co_await r.release(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_FIXTURE_TEST_CASE(a_cancelled_waiting_writer_or_reader_ends_with_operation_aborted_and_leaves_no_mark, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto r = co_await c.new_owner().read_write_lock("rw:cancel").read().acquire(asio::use_awaitable);
    asio::cancellation_signal cancel_writer;
    std::optional<error_code> writer_error;
    auto const on_writer = [&](error_code e, held) { writer_error = e; };
    c.new_owner().read_write_lock("rw:cancel").write().acquire(asio::bind_cancellation_slot(cancel_writer.slot(), on_writer));
    auto const marked = [&] { return redis.command({"EXISTS", "redisync_rwlock_writers:{rw:cancel}"}).integer() == 1; };
    co_await redisync::test::wait_until(marked, 5s);
    // A reader waits behind the marked writer, and is cancelled too.
    asio::cancellation_signal cancel_reader;
    std::optional<error_code> reader_error;
    auto const on_reader = [&](error_code e, held) { reader_error = e; };
    c.new_owner().read_write_lock("rw:cancel").read().acquire(asio::bind_cancellation_slot(cancel_reader.slot(), on_reader));
    co_await sleep_for(100ms);
    BOOST_TEST(!reader_error.has_value());
    cancel_reader.emit(asio::cancellation_type::terminal);
    cancel_writer.emit(asio::cancellation_type::terminal);
    auto const ended = [&] {
      return writer_error.has_value() && reader_error.has_value() &&
             redis.command({"EXISTS", "redisync_rwlock_writers:{rw:cancel}"}).integer() == 0;
    };
    co_await redisync::test::wait_until(ended, 2s);
    BOOST_TEST((*writer_error == asio::error::operation_aborted), writer_error->message());
    BOOST_TEST((*reader_error == asio::error::operation_aborted), reader_error->message());
    BOOST_TEST(redis.command({"HLEN", "rw:cancel"}).integer() == 2);  // `mode` and the one reader
    co_await r.release(asio::use_awaitable);
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_FIXTURE_TEST_CASE(without_writer_preference_readers_share_past_a_waiting_writer, lock_env) {
  run(
      [&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
        auto r = co_await c.new_owner().read_write_lock("rw:nopref").read().acquire(asio::use_awaitable);
        background_acquire writer{ctx, c.new_owner().read_write_lock("rw:nopref").write()};
        co_await sleep_for(100ms);
        BOOST_TEST(redis.command({"EXISTS", "redisync_rwlock_writers:{rw:nopref}"}).integer() == 0);
        auto shared = co_await c.new_owner().read_write_lock("rw:nopref").read().try_acquire(0ms, asio::use_awaitable);
        BOOST_TEST_REQUIRE(shared.has_value());
        co_await shared->release(asio::use_awaitable);
        co_await r.release(asio::use_awaitable);
        BOOST_TEST_REQUIRE(co_await writer.wait(5s));
        BOOST_TEST_REQUIRE(writer.result().has_value());
        co_await writer.result()->release(asio::use_awaitable);
        co_await c.flush_subscriptions(asio::use_awaitable);
        redisync::test::expect_nothing_left(redis);
      },
      [](redisync::config& cfg) { cfg.prefer_writers = false; });
}

// Redis 7.0 sets each expiry by its own clock reading, so a level and the hash set in one script can
// end a millisecond apart (or a few, on a slow server): the hash's time a little past the longest
// level's must not make a release believe another level is longer. Here the last live reader
// leaves beside the field of a reader whose level is gone: the lock is free.
BOOST_FIXTURE_TEST_CASE(a_hash_that_outlives_the_longest_level_by_milliseconds_is_still_freed_by_the_last_reader,
                        lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto rw = c.new_owner().read_write_lock("rw:skew");
    auto r = co_await rw.read().acquire(20s, asio::use_awaitable);
    redis.command({"HSET", "rw:skew", "gone-reader", "1"});  // its level key expired
    redis.command({"PEXPIRE", "rw:skew", std::to_string(pttl(redis, timeout_key("rw:skew", rw.owner_id(), 1)) + 5)});
    co_await r.release(asio::use_awaitable);
    BOOST_TEST(redis.command({"EXISTS", "rw:skew"}).integer() == 0);
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_FIXTURE_TEST_CASE(the_watchdog_keeps_reads_and_writes_for_ten_leases_and_renews_only_this_clients_reads,
                        lock_env) {
  run(
      [&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
        auto rw = c.new_owner().read_write_lock("rw:dog");
        auto r1 = co_await rw.read().acquire(asio::use_awaitable);
        auto r2 = co_await rw.read().acquire(asio::use_awaitable);
        auto r3 = co_await rw.read().acquire(asio::use_awaitable);
        auto w = co_await c.new_owner().read_write_lock("rw:dog2").write().acquire(asio::use_awaitable);
        // Another client's read with a fixed lease and no watchdog: a client that died.
        running_client other{ctx, fast_config(redis)};
        auto dead = other->new_owner().read_write_lock("rw:dog");
        auto gone = co_await dead.read().acquire(300ms, asio::use_awaitable);
        auto const renewals_before = redisync::test::command_calls(redis, "evalsha");
        co_await sleep_for(3000ms);  // 10 leases
        BOOST_TEST((r1.status() == hold_status::held));
        BOOST_TEST((w.status() == hold_status::held));
        for (int level : {1, 2, 3}) BOOST_TEST(pttl(redis, timeout_key("rw:dog", rw.owner_id(), level)) > 0);
        BOOST_TEST(redis.command({"EXISTS", timeout_key("rw:dog", dead.owner_id(), 1)}).integer() == 0);
        // All three levels in one call per renewal (one call every lease/3 at most, with the write's).
        auto const renewals = redisync::test::command_calls(redis, "evalsha") - renewals_before;
        BOOST_TEST(renewals <= 3 * 10 * 2 + 4, renewals << " renewal calls");
        BOOST_TEST((gone.status() == hold_status::lost));
        co_await r3.release(asio::use_awaitable);
        co_await r2.release(asio::use_awaitable);
        co_await r1.release(asio::use_awaitable);
        // The dead reader's field does not outlive the live reads: the lock is free.
        BOOST_TEST(redis.command({"EXISTS", "rw:dog"}).integer() == 0);
        co_await w.release(asio::use_awaitable);
        co_await other.stop();
        redisync::test::expect_nothing_left(redis);
      },
      [](redisync::config& cfg) { cfg.watchdog_lease = 300ms; });
}

BOOST_FIXTURE_TEST_CASE(a_renewal_of_many_readers_looks_at_their_hash_once_per_call_and_remakes_a_level_gone_meanwhile, lock_env) {
  run(
      [&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
        std::vector<redisync::held> reads;
        auto const first = c.new_owner().read_write_lock("rw:many");
        reads.push_back(co_await first.read().acquire(asio::use_awaitable));
        for (int i = 1; i < 20; ++i) {
          reads.push_back(co_await c.new_owner().read_write_lock("rw:many").read().acquire(asio::use_awaitable));
        }
        auto const calls_before = redisync::test::command_calls(redis, "evalsha");
        auto const expiries_before = redisync::test::command_calls(redis, "pexpire");
        auto const pttls_before = redisync::test::command_calls(redis, "pttl");
        auto const renewed_before = c.metrics().renewed_holds;
        // Five renewals of every read, and one more batch's worth: a batch in flight at the counts
        // above was counted by Redis before and by the client after (the reads were taken one by one,
        // so a tick may renew only some of them).
        auto const renewed_five_times = [&] { return c.metrics().renewed_holds >= renewed_before + 20 * 6; };
        co_await redisync::test::wait_until(renewed_five_times, 5s);
        auto const calls = redisync::test::command_calls(redis, "evalsha") - calls_before;
        auto const expiries = redisync::test::command_calls(redis, "pexpire") - expiries_before;
        auto const pttls = redisync::test::command_calls(redis, "pttl") - pttls_before;
        auto const renewed = static_cast<std::int64_t>(c.metrics().renewed_holds - renewed_before);
        BOOST_TEST(expiries >= 20 * 5, expiries << " expiries moved");
        // One level per read, and the hash once per call (PEXPIRE ... GT: no look before).
        BOOST_TEST(expiries <= renewed + calls, expiries << " expiries for " << renewed << " reads in " << calls << " calls");
        BOOST_TEST(pttls == 0, pttls << " looks at the hash in " << calls << " renewal calls");
        // A level's key gone meanwhile is made again: the owner still reads.
        auto const level = timeout_key("rw:many", first.owner_id(), 1);
        redis.command({"DEL", level});
        auto const level_back = [&] { return redis.command({"EXISTS", level}).integer() == 1; };
        co_await redisync::test::wait_until(level_back, 2s);
        for (auto& r : reads) {
          BOOST_TEST((r.status() == hold_status::held));
          co_await r.release(asio::use_awaitable);
        }
        redisync::test::expect_nothing_left(redis);
      },
      [](redisync::config& cfg) { cfg.watchdog_lease = 300ms; });
}

// A client that died holding a read (a fixed lease, no watchdog) leaves its field in the hash, which
// the live readers of another client keep: once all its levels are gone, their renewals take the
// field away (they look for dead readers every few calls), and the live reads go on.
BOOST_FIXTURE_TEST_CASE(a_dead_readers_field_leaves_the_hash_that_live_readers_keep_once_its_levels_are_gone,
                        lock_env) {
  run(
      [&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
        auto live = co_await c.new_owner().read_write_lock("rw:ghost").read().acquire(asio::use_awaitable);
        running_client other{ctx, fast_config(redis)};
        auto const dead = other->new_owner();
        auto dead_read = dead.read_write_lock("rw:ghost").read();
        auto gone = co_await dead_read.acquire(300ms, asio::use_awaitable);
        auto gone_deeper = co_await dead_read.acquire(300ms, asio::use_awaitable);  // two levels
        BOOST_TEST(redisync::test::hget_count(redis, "rw:ghost", dead.id()) == 2);
        auto const field_gone = [&] { return redis.command({"HEXISTS", "rw:ghost", dead.id()}).integer() == 0; };
        co_await redisync::test::wait_until(field_gone, 5s);
        BOOST_TEST(redis.command({"HEXISTS", "rw:ghost", dead.id()}).integer() == 0);
        BOOST_TEST(redis.command({"HLEN", "rw:ghost"}).integer() == 2);  // mode and the live reader
        BOOST_TEST((live.status() == hold_status::held));
        co_await live.release(asio::use_awaitable);
        co_await other.stop();
        redisync::test::expect_nothing_left(redis);
      },
      [](redisync::config& cfg) { cfg.watchdog_lease = 300ms; });
}

BOOST_FIXTURE_TEST_CASE(force_release_deletes_the_lock_and_its_read_timeouts_and_ends_the_holds_here, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto rw = c.new_owner().read_write_lock("rw:force");
    auto r = co_await rw.read().acquire(asio::use_awaitable);
    BOOST_TEST(co_await rw.read().is_locked(asio::use_awaitable));
    BOOST_TEST(co_await rw.write().force_release(asio::use_awaitable));
    BOOST_TEST((r.status() == hold_status::lost));
    BOOST_TEST(!(co_await rw.read().is_locked(asio::use_awaitable)));
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_FIXTURE_TEST_CASE(with_lock_runs_a_body_under_a_read_and_under_a_write, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto rw = c.new_owner().read_write_lock("rw:with");
    auto const in_read = [&](redisync::held const&) -> asio::awaitable<int> {
      co_return static_cast<int>(hget_count(redis, "rw:with", rw.owner_id()));
    };
    BOOST_TEST(co_await redisync::with_lock(rw.read(), in_read, asio::use_awaitable) == 1);
    auto const in_write = [&](redisync::held const& h) -> asio::awaitable<std::uint64_t> { co_return h.token(); };
    BOOST_TEST(co_await redisync::with_lock(rw.write(), in_write, asio::use_awaitable) > 0u);
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_AUTO_TEST_SUITE_END()
