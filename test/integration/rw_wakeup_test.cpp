// Who wakes whom in the read-write lock, against a real redis-server: unlock messages across
// clients, a client's own releases waking its waiters, and the order of readers and writers that
// come or leave together.

#include <redisync/redisync.hpp>

#include "support/lock_fixture.hpp"
#include "support/rw_lock_helpers.hpp"

#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

namespace asio = boost::asio;
using namespace redisync::test::lock_names;
using redisync::test::background_acquire;
using redisync::test::fast_config;
using redisync::test::gets_it_then_releases;
using redisync::test::pttl;
using redisync::test::round_trip;
using redisync::test::wait_for_marks;

BOOST_AUTO_TEST_SUITE(read_write_lock_wakeups)

BOOST_FIXTURE_TEST_CASE(a_write_release_wakes_waiting_readers_of_other_clients_even_when_the_writer_still_reads,
                        lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    running_client other{ctx, fast_config(redis)};
    auto rw = c.new_owner().read_write_lock("rw:wake");
    auto w = co_await rw.write().acquire(asio::use_awaitable);
    auto r = co_await rw.read().acquire(asio::use_awaitable);
    std::vector<std::unique_ptr<background_acquire>> readers;
    for (int i = 0; i < 3; ++i) {
      readers.push_back(std::make_unique<background_acquire>(ctx, other->new_owner().read_write_lock("rw:wake").read()));
    }
    auto const all_wait = [&] {
      return other->metrics().waiters == 3 && redisync::test::subscribers_of(redis, "redisson_rwlock:{rw:wake}") > 0;
    };
    co_await redisync::test::wait_until(all_wait, 5s);
    for (auto& b : readers) BOOST_TEST(!b->result().has_value());
    auto const released = std::chrono::steady_clock::now();
    co_await w.release(asio::use_awaitable);
    // The lease is 30 s: only the message can wake them this soon.
    for (auto& b : readers) {
      BOOST_TEST_REQUIRE(co_await b->wait(5s));
      BOOST_TEST_REQUIRE(b->result().has_value());
    }
    BOOST_TEST((std::chrono::steady_clock::now() - released < 3s));
    BOOST_TEST((r.status() == hold_status::held));
    for (auto& b : readers) co_await b->result()->release(asio::use_awaitable);
    co_await r.release(asio::use_awaitable);
    co_await other.stop();
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_FIXTURE_TEST_CASE(a_final_read_release_wakes_a_waiting_writer_of_another_client, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    running_client other{ctx, fast_config(redis)};
    auto r1 = co_await c.new_owner().read_write_lock("rw:last").read().acquire(asio::use_awaitable);
    auto r2 = co_await c.new_owner().read_write_lock("rw:last").read().acquire(asio::use_awaitable);
    background_acquire writer{ctx, other->new_owner().read_write_lock("rw:last").write()};
    co_await wait_for_marks(redis, "rw:last", 1);
    // A new reader waits behind the marked writer.
    BOOST_TEST(!(co_await c.new_owner().read_write_lock("rw:last").read().try_acquire(0ms, asio::use_awaitable)));
    co_await r1.release(asio::use_awaitable);
    // A message of that release would have reached `other` before its first reply here, and the
    // attempt it woke would have had its reply before the second.
    co_await round_trip(*other);
    co_await round_trip(*other);
    BOOST_TEST(!writer.result().has_value());
    auto const released = std::chrono::steady_clock::now();
    co_await r2.release(asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await writer.wait(5s));
    BOOST_TEST_REQUIRE(writer.result().has_value());
    BOOST_TEST((std::chrono::steady_clock::now() - released < 3s));  // its own next try: 30 s
    BOOST_TEST(redis.command({"EXISTS", "redisync_rwlock_writers:{rw:last}"}).integer() == 0);
    co_await writer.result()->release(asio::use_awaitable);
    co_await other.stop();
    redisync::test::expect_nothing_left(redis);
  });
}

// Inside one client, the waiters do not wait for the unlock message: when the client's last hold
// of the lock is released, its waiting writer tries behind the release. Here no message can come
// (the client may not subscribe) and the writer's own bound is the readers' lease, 30 s away.
BOOST_FIXTURE_TEST_CASE(a_writer_waiting_behind_this_clients_last_reader_tries_as_it_is_released, lock_env) {
  redis.command({"ACL", "SETUSER", "default", "-subscribe"});
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto r1 = co_await c.new_owner().read_write_lock("rw:local").read().acquire(asio::use_awaitable);
    auto r2 = co_await c.new_owner().read_write_lock("rw:local").read().acquire(asio::use_awaitable);
    background_acquire writer{ctx, c.new_owner().read_write_lock("rw:local").write()};
    co_await wait_for_marks(redis, "rw:local", 1);
    co_await r1.release(asio::use_awaitable);  // another reader of this client still holds
    co_await round_trip(c);  // an attempt woken by that release would have been answered by now
    BOOST_TEST(!writer.result().has_value());
    co_await r2.release(asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await writer.wait(3s));
    BOOST_TEST_REQUIRE(writer.result().has_value());
    co_await writer.result()->release(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
  });
}

// The unlock message of a release that already woke this client's next writer comes before the
// release's reply; passed on, it would wake the writer after that one for an attempt bound to fail.
BOOST_FIXTURE_TEST_CASE(a_writers_own_unlock_message_does_not_wake_the_next_writer_for_nothing, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto first = co_await c.new_owner().read_write_lock("rw:next").write().acquire(asio::use_awaitable);
    background_acquire second{ctx, c.new_owner().read_write_lock("rw:next").write()};
    background_acquire third{ctx, c.new_owner().read_write_lock("rw:next").write()};
    co_await wait_for_marks(redis, "rw:next", 2);
    co_await c.flush_subscriptions(asio::use_awaitable);
    redis.command({"CONFIG", "RESETSTAT"});
    co_await first.release(asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await second.wait(3s));
    BOOST_TEST_REQUIRE(second.result().has_value());
    // An attempt woken by the message would have gone out before this reply came back.
    co_await round_trip(c);
    // A refused write attempt renews its mark (ZADD); the granted one removes it (ZREM).
    auto const stats = std::string{redis.command({"INFO", "commandstats"}).text()};
    BOOST_TEST(stats.find("cmdstat_zadd:") == std::string::npos, stats);
    co_await second.result()->release(asio::use_awaitable);
    co_await gets_it_then_releases(third);
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
  });
}

// Tasks that a burst of replies resumes ask together: a reader among them does not start a read
// that the writer among them would then have to wait for.
BOOST_FIXTURE_TEST_CASE(a_reader_that_asks_together_with_a_writer_of_this_client_lets_the_writer_go_first, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto other = co_await c.new_owner().read_write_lock("rw:together").read().acquire(asio::use_awaitable);
    background_acquire reader{ctx, c.new_owner().read_write_lock("rw:together").read()};
    background_acquire writer{ctx, c.new_owner().read_write_lock("rw:together").write()};
    co_await wait_for_marks(redis, "rw:together", 1);
    // A read attempt sent before the writer's would have been granted by now.
    co_await round_trip(c);
    BOOST_TEST(!reader.result().has_value());
    BOOST_TEST(redis.command({"HLEN", "rw:together"}).integer() == 2);  // mode and `other`
    co_await other.release(asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await writer.wait(3s));
    BOOST_TEST_REQUIRE(writer.result().has_value());
    BOOST_TEST(!reader.result().has_value());
    co_await writer.result()->release(asio::use_awaitable);
    co_await gets_it_then_releases(reader);
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
  });
}

// Readers yield to work already queued in the client (above); while they wait for it, the
// client's requests wait too, so readers that ask together go out in one script call.
BOOST_FIXTURE_TEST_CASE(readers_that_ask_together_try_in_one_script_call, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto ex = co_await asio::this_coro::executor;
    // Connected and the script loaded: requests would otherwise wait for either, and then go together.
    co_await (co_await c.new_owner().read_write_lock("rw:ask").read().acquire(asio::use_awaitable))
        .release(asio::use_awaitable);
    auto const calls_before = redisync::test::command_calls(redis, "evalsha");
    std::vector<std::optional<redisync::held>> reads(8);
    std::vector<std::shared_ptr<redisync::test::event>> granted;
    for (auto& r : reads) {
      auto e = std::make_shared<redisync::test::event>(ex);
      granted.push_back(e);
      c.new_owner().read_write_lock("rw:ask").read().acquire(
          [&r, e](boost::system::error_code ec, redisync::held h) {
            if (!ec) r = std::move(h);
            e->notify();
          });
    }
    for (auto& e : granted) BOOST_TEST_REQUIRE(co_await e->wait(3s));
    BOOST_TEST(redisync::test::command_calls(redis, "evalsha") - calls_before == 1);
    BOOST_TEST(redis.command({"HLEN", "rw:ask"}).integer() == 9);  // mode and eight readers
    for (auto& r : reads) {
      BOOST_TEST_REQUIRE(r.has_value());
      co_await r->release(asio::use_awaitable);
    }
    redisync::test::expect_nothing_left(redis);
  });
}

// Readers released together in one script call leave the hash's time to the last of them.
BOOST_FIXTURE_TEST_CASE(readers_that_leave_together_free_the_lock_once_and_keep_its_time_right, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    std::vector<redisync::held> reads;
    for (int i = 0; i < 4; ++i) {
      reads.push_back(co_await c.new_owner().read_write_lock("rw:leave").read().acquire(asio::use_awaitable));
    }
    auto longer = co_await c.new_owner().read_write_lock("rw:leave").read().acquire(60s, asio::use_awaitable);
    // Released in one go: adjacent calls to one slot go out as one script call.
    auto release_all = [&]() -> asio::awaitable<void> {
      auto ex = co_await asio::this_coro::executor;
      std::vector<std::shared_ptr<redisync::test::event>> done;
      for (auto& r : reads) {
        auto e = std::make_shared<redisync::test::event>(ex);
        done.push_back(e);
        r.release([e](boost::system::error_code) { e->notify(); });
      }
      for (auto& e : done) BOOST_TEST_REQUIRE(co_await e->wait(3s));
    };
    co_await release_all();
    // The longest level left sets the hash's time: more than the default lease of 30 s.
    BOOST_TEST(redis.command({"HLEN", "rw:leave"}).integer() == 2);
    BOOST_TEST(pttl(redis, "rw:leave") > 30000);
    co_await longer.release(asio::use_awaitable);
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
  });
}

// Read releases of one lock sent together run as one script call: each owner gives up exactly its
// innermost level, one whose field is gone learns that it lost the lease and changes nothing, the
// hash's time comes down to the longest level left when the longest one goes, and the lock is
// freed by its last reader.
BOOST_FIXTURE_TEST_CASE(read_releases_sent_together_end_exactly_their_own_levels, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    std::string const name = "rw:group";
    auto read_of = [&](redisync::owner const& o) { return o.read_write_lock(name).read(); };
    std::vector<redisync::owner> owners;
    for (int i = 0; i < 5; ++i) owners.push_back(c.new_owner());
    std::vector<redisync::held> released;
    for (int i = 0; i < 4; ++i) released.push_back(co_await read_of(owners[i]).acquire(20s, asio::use_awaitable));
    // The fourth owner reads twice: its inner level goes, its outer one stays.
    auto outer = std::move(released[3]);
    released[3] = co_await read_of(owners[3]).acquire(20s, asio::use_awaitable);
    released.push_back(co_await read_of(owners[4]).acquire(50s, asio::use_awaitable));
    BOOST_TEST(pttl(redis, name) > 40000);
    auto const level_key = [&](redisync::owner const& o, int level) {
      return "{" + name + "}:" + o.id() + ":rwlock_timeout:" + std::to_string(level);
    };
    // The second owner's hold lapsed behind its back.
    redis.command({"HDEL", name, owners[1].id()});
    redis.command({"DEL", level_key(owners[1], 1)});
    auto const calls_before = redisync::test::command_calls(redis, "evalsha");
    auto ex = co_await asio::this_coro::executor;
    std::vector<error_code> results(released.size());
    std::vector<std::shared_ptr<redisync::test::event>> done;
    for (std::size_t i = 0; i < released.size(); ++i) {
      auto e = std::make_shared<redisync::test::event>(ex);
      done.push_back(e);
      released[i].release([&results, i, e](error_code ec) {
        results[i] = ec;
        e->notify();
      });
    }
    for (auto& e : done) BOOST_TEST_REQUIRE(co_await e->wait(3s));
    BOOST_TEST(redisync::test::command_calls(redis, "evalsha") - calls_before == 1);
    for (std::size_t i = 0; i < results.size(); ++i) {
      auto const expected = i == 1 ? error_code{error::lease_lost} : error_code{};
      BOOST_TEST((results[i] == expected), i << ": " << results[i].message());
    }
    BOOST_TEST(redis.command({"HLEN", name}).integer() == 2);  // mode and the outer level's owner
    BOOST_TEST(redisync::test::hget_count(redis, name, owners[3].id()) == 1);
    BOOST_TEST(pttl(redis, level_key(owners[3], 1)) > 0);
    BOOST_TEST(redis.command({"EXISTS", level_key(owners[3], 2)}).integer() == 0);
    BOOST_TEST(pttl(redis, name) <= 20000);
    BOOST_TEST(pttl(redis, name) > 10000);
    co_await outer.release(asio::use_awaitable);
    BOOST_TEST(redis.command({"EXISTS", name}).integer() == 0);
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_AUTO_TEST_SUITE_END()
