// The read-write lock's grants, against a real redis-server: a release that frees the lock gives it
// to a waiting writer of another client, which learns of it from the message or its next try, lets
// it go if it gave up meanwhile, and gets nothing if its client is dead.

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
// learns of it from the grant message and confirms it with one try. Its own tries would come only
// when the holder's 30 s lease ran out.
BOOST_FIXTURE_TEST_CASE(a_release_that_frees_the_lock_gives_it_to_a_waiting_writer_of_another_client_unasked,
                        lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    running_client other{ctx, fast_config(redis)};
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
      // The release, and the writer's confirmation.
      auto const calls = redisync::test::command_calls(redis, "evalsha");
      BOOST_TEST(calls == 2, "holder writes: " << holder_writes << ", script calls: " << calls);
      // The confirmation gave the grant the writer's lease (the grant's own is two liveness periods).
      BOOST_TEST(redis.command({"PTTL", "rw:grant"}).integer() > 20000);
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
    // Without a subscription, it looks again within a second.
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
    running_client other{ctx, fast_config(redis)};
    auto h = co_await c.new_owner().read_write_lock("rw:unheard").write().acquire(asio::use_awaitable);
    auto const waiting = other->new_owner();
    asio::cancellation_signal cancel_writer;
    std::optional<error_code> writer_error;
    auto const on_writer = [&](error_code e, held) { writer_error = e; };
    auto side = waiting.read_write_lock("rw:unheard").write();
    side.acquire(asio::bind_cancellation_slot(cancel_writer.slot(), on_writer));
    co_await wait_for_marks(redis, "rw:unheard", 1);
    // Once Redis has refused its subscription, the writer tries once more (answered before the
    // second round trip's reply), then sleeps until its next look, a second away.
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

// A writer whose client's liveness key is gone is dead: it is given nothing, and its client's other
// marks go with it; the release frees the lock and says so as before, or gives it to a live writer
// behind them. A mark of no known form goes too.
BOOST_FIXTURE_TEST_CASE(the_marks_of_a_dead_client_are_given_nothing_and_dropped, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    std::string const marks = "redisync_rwlock_writers:{rw:dead}";
    for (bool const live_one_behind : {false, true}) {
      auto h = co_await c.new_owner().read_write_lock("rw:dead").write().acquire(asio::use_awaitable);
      redis.command({"ZADD", marks, "1", "gone/30000:gone:a:write", "2", "gone/30000:gone:b:write", "3", "no-form"});
      if (live_one_behind) {
        redis.command({"SET", "redisync_alive:alive", "1", "PX", "5000"});
        redis.command({"ZADD", marks, "4", "alive/2000:alive:w:write"});
      }
      co_await h.release(asio::use_awaitable);
      if (live_one_behind) {
        BOOST_TEST(redis.command({"HGET", "rw:dead", "alive:w:write"}).text() == "1");
        auto const pttl = redis.command({"PTTL", "rw:dead"}).integer();
        BOOST_TEST((pttl > 0 && pttl <= 2000), pttl);  // the grant's lease, until the writer confirms
        redis.command({"DEL", "rw:dead", "redisync_alive:alive"});
      } else {
        BOOST_TEST(redis.command({"EXISTS", "rw:dead"}).integer() == 0);
      }
      BOOST_TEST(redis.command({"EXISTS", marks}).integer() == 0);
    }
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_AUTO_TEST_SUITE_END()
