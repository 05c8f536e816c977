// The read-write lock's grants, against a real redis-server: a release that frees the lock gives it
// to a waiting writer of another client, which learns of it from the message or its next try, lets
// it go if it gave up meanwhile, and gets nothing if its mark is stale or its lease too short.

#include <redisync/redisync.hpp>

#include "support/lock_fixture.hpp"
#include "support/rw_lock_helpers.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <optional>

namespace asio = boost::asio;
using namespace redisync::test::lock_names;
using redisync::test::background_acquire;
using redisync::test::fast_config;
using redisync::test::round_trip;
using redisync::test::wait_for_marks;

BOOST_AUTO_TEST_SUITE(read_write_lock_grants)

// A release that frees the lock gives it to a marked writer of another client at once: the writer
// learns of it from the grant message and asks nothing. Its own tries would come every 6.7 s here.
BOOST_FIXTURE_TEST_CASE(a_release_that_frees_the_lock_gives_it_to_a_waiting_writer_of_another_client_unasked,
                        lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto slow_tries = fast_config(redis);
    slow_tries.fair_waiter_liveness = 20s;  // (below the 30 s lease: a grant needs a longer lease)
    running_client other{ctx, slow_tries};
    // Once the holder writes, once it reads.
    auto one_round = [&](bool holder_writes) -> asio::awaitable<void> {
      auto rw = c.new_owner().read_write_lock("rw:grant");
      auto side = holder_writes ? rw.write() : rw.read();  // (GCC 12: no temporary in a co_await)
      auto h = co_await side.acquire(asio::use_awaitable);
      background_acquire writer{ctx, other->new_owner().read_write_lock("rw:grant").write()};
      co_await wait_for_marks(redis, "rw:grant", 1);
      auto const subscribed = [&] { return redisync::test::subscribers_of(redis, "redisson_rwlock:{rw:grant}") > 0; };
      co_await redisync::test::wait_until(subscribed, 5s);
      // The confirmation comes before the first reply, and the try it sends before the second.
      co_await round_trip(*other);
      co_await round_trip(*other);
      redis.command({"CONFIG", "RESETSTAT"});
      auto const released = std::chrono::steady_clock::now();
      co_await h.release(asio::use_awaitable);
      BOOST_TEST_REQUIRE(co_await writer.wait(3s), "holder writes: " << holder_writes);
      BOOST_TEST_REQUIRE(writer.result().has_value());
      BOOST_TEST((std::chrono::steady_clock::now() - released < 3s));
      // The release, and no try.
      auto const calls = redisync::test::command_calls(redis, "evalsha");
      BOOST_TEST(calls == 1, "holder writes: " << holder_writes << ", script calls: " << calls);
      // A fresh write: the lock's newest fencing token, and one level (one release frees it).
      BOOST_TEST(std::to_string(writer.result()->token()) ==
                 redis.command({"GET", "redisson_lock_token:{rw:grant}"}).text());
      BOOST_TEST(h.token() < writer.result()->token());
      co_await writer.result()->release(asio::use_awaitable);
      BOOST_TEST(redis.command({"EXISTS", "rw:grant"}).integer() == 0);
    };
    co_await one_round(true);
    co_await one_round(false);
    co_await other.stop();
    redisync::test::expect_nothing_left(redis);
  });
}

// Without the message (the client may not subscribe), the writer's next try finds the lock given
// to it, and takes it as it is: one level, the grant's token.
BOOST_FIXTURE_TEST_CASE(a_writer_that_missed_its_grant_message_takes_the_grant_at_its_next_try, lock_env) {
  redis.command({"ACL", "SETUSER", "default", "-subscribe"});
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    running_client other{ctx, fast_config(redis)};
    auto h = co_await c.new_owner().read_write_lock("rw:missed").write().acquire(asio::use_awaitable);
    auto const waiting = other->new_owner();
    background_acquire writer{ctx, waiting.read_write_lock("rw:missed").write()};
    co_await wait_for_marks(redis, "rw:missed", 1);
    co_await h.release(asio::use_awaitable);
    BOOST_TEST(redisync::test::hget_count(redis, "rw:missed", waiting.id() + ":write") == 1);
    // Its tries renew its mark every third of a second.
    BOOST_TEST_REQUIRE(co_await writer.wait(3s));
    BOOST_TEST_REQUIRE(writer.result().has_value());
    BOOST_TEST(std::to_string(writer.result()->token()) ==
               redis.command({"GET", "redisson_lock_token:{rw:missed}"}).text());
    co_await writer.result()->release(asio::use_awaitable);
    BOOST_TEST(redis.command({"EXISTS", "rw:missed"}).integer() == 0);
    co_await other.stop();
    redisync::test::expect_nothing_left(redis);
  });
}

// A writer that gives up without having heard of a grant (no message; cancelled before its next
// try) releases the lock that was given to it: nobody is left holding a lock that nobody uses.
BOOST_FIXTURE_TEST_CASE(a_writer_that_gives_up_releases_a_grant_it_never_heard_of, lock_env) {
  redis.command({"ACL", "SETUSER", "default", "-subscribe"});
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto slow_tries = fast_config(redis);
    slow_tries.fair_waiter_liveness = 20s;  // (below the 30 s lease)
    running_client other{ctx, slow_tries};
    auto h = co_await c.new_owner().read_write_lock("rw:unheard").write().acquire(asio::use_awaitable);
    auto const waiting = other->new_owner();
    asio::cancellation_signal cancel_writer;
    std::optional<error_code> writer_error;
    auto const on_writer = [&](error_code e, held) { writer_error = e; };
    auto side = waiting.read_write_lock("rw:unheard").write();
    side.acquire(asio::bind_cancellation_slot(cancel_writer.slot(), on_writer));
    co_await wait_for_marks(redis, "rw:unheard", 1);
    // Once Redis has refused its subscription, the writer tries once more (answered before the
    // second round trip's reply), then sleeps until its next try, 6.7 s away.
    auto const refused = [&] {
      return std::string{redis.command({"INFO", "commandstats"}).text()}.find("cmdstat_subscribe:") != std::string::npos;
    };
    co_await redisync::test::wait_until(refused, 5s);
    co_await round_trip(*other);
    co_await round_trip(*other);
    co_await h.release(asio::use_awaitable);
    BOOST_TEST(redisync::test::hget_count(redis, "rw:unheard", waiting.id() + ":write") == 1);
    cancel_writer.emit(asio::cancellation_type::terminal);
    auto const released = [&] {
      return writer_error.has_value() && redis.command({"EXISTS", "rw:unheard"}).integer() == 0;
    };
    co_await redisync::test::wait_until(released, 3s);
    BOOST_TEST((*writer_error == asio::error::operation_aborted), writer_error->message());
    co_await other.stop();
    redisync::test::expect_nothing_left(redis);
  });
}

// A writer that has not tried for more than half its mark's liveness may be gone, and one whose
// lease is no longer than its liveness would count it from a try that long ago: neither is given
// anything, and the release frees the lock and says so as before.
BOOST_FIXTURE_TEST_CASE(a_stale_mark_or_one_with_a_lease_within_its_liveness_is_given_nothing, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto h = co_await c.new_owner().read_write_lock("rw:stale").write().acquire(asio::use_awaitable);
    auto const time = redis.command({"TIME"});
    auto const now_ms = std::stoll(std::string{time.elements()[0].text()}) * 1000 +
                        std::stoll(std::string{time.elements()[1].text()}) / 1000;
    // Liveness 10 s, 4 s left: its last try was 6 s ago. Lease 1 s, liveness 1 s, just renewed.
    redis.command({"ZADD", "redisync_rwlock_writers:{rw:stale}", std::to_string(now_ms + 4000),
                   "30000:10000:gone:write", std::to_string(now_ms + 1000), "1000:1000:short:write"});
    co_await h.release(asio::use_awaitable);
    BOOST_TEST(redis.command({"EXISTS", "rw:stale"}).integer() == 0);
    redis.command({"DEL", "redisync_rwlock_writers:{rw:stale}"});
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_AUTO_TEST_SUITE_END()
