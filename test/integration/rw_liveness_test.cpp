// The read-write lock's waiting writers, judged alive per client against a real redis-server: their
// marks cost one beat per client and period however many writers wait, and a dead client's writers
// stop holding readers back once its liveness key is gone.

#include <redisync/redisync.hpp>

#include "support/lock_fixture.hpp"
#include "support/rw_lock_helpers.hpp"

#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <memory>
#include <vector>

namespace asio = boost::asio;
using namespace redisync::test::lock_names;
using redisync::test::background_acquire;
using redisync::test::fast_config;
using redisync::test::round_trip;
using redisync::test::wait_for_marks;

BOOST_AUTO_TEST_SUITE(read_write_lock_liveness)

// 40 writers of one client wait for 2 s behind a reader of another client: the client beats once
// every third of its liveness (150 ms here), and no writer tries again before the reader's lease
// would end. Each writer trying to keep its own mark alive would make 530 calls.
BOOST_FIXTURE_TEST_CASE(waiting_writers_of_one_client_cost_one_beat_per_period_whatever_their_number, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto cfg = fast_config(redis);
    cfg.fair_waiter_liveness = 450ms;
    running_client other{ctx, cfg};
    auto reader = co_await c.new_owner().read_write_lock("rw:crowd").read().acquire(asio::use_awaitable);
    std::vector<std::unique_ptr<background_acquire>> writers;
    for (int i = 0; i < 40; ++i) {
      writers.push_back(std::make_unique<background_acquire>(ctx, other->new_owner().read_write_lock("rw:crowd").write()));
    }
    co_await wait_for_marks(redis, "rw:crowd", 40);
    co_await other->flush_subscriptions(asio::use_awaitable);
    redis.command({"CONFIG", "RESETSTAT"});
    auto const since = std::chrono::steady_clock::now();
    co_await redisync::test::sleep_for(2s);
    auto const calls = redisync::test::command_calls(redis, "evalsha");
    auto const periods = (std::chrono::steady_clock::now() - since) / 150ms;
    BOOST_TEST_MESSAGE(calls << " script calls in " << periods << " beat periods");
    BOOST_TEST(calls <= periods + 6);  // (slack for timers: one writer's own tries would be 13)
    BOOST_TEST(redis.command({"ZCARD", "redisync_rwlock_writers:{rw:crowd}"}).integer() == 40);
    co_await reader.release(asio::use_awaitable);
    for (auto& w : writers) {
      BOOST_TEST_REQUIRE(co_await w->wait(5s));
      BOOST_TEST_REQUIRE(w->result().has_value());
      co_await w->result()->release(asio::use_awaitable);
    }
    co_await other.stop();
    redisync::test::expect_nothing_left(redis);
  });
}

// A client that dies with a writer waiting (it stops without leaving, as a killed process would)
// holds readers back only until its liveness key is gone; a reader of another client that waits
// then gets in, and the dead writer's mark is dropped.
BOOST_FIXTURE_TEST_CASE(a_dead_clients_waiting_writer_holds_readers_back_only_until_its_key_is_gone, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto cfg = fast_config(redis);
    cfg.fair_waiter_liveness = 600ms;
    auto dying = std::make_unique<running_client>(ctx, cfg);
    auto first = co_await c.new_owner().read_write_lock("rw:dying").read().acquire(asio::use_awaitable);
    background_acquire writer{ctx, (*dying)->new_owner().read_write_lock("rw:dying").write()};
    co_await wait_for_marks(redis, "rw:dying", 1);
    BOOST_TEST(!(co_await c.new_owner().read_write_lock("rw:dying").read().try_acquire(0ms, asio::use_awaitable)));
    // The writer's subscription is confirmed before the first reply, and the look it takes then is
    // answered before the second: no attempt is in flight when the client stops (one would be undone).
    co_await round_trip(**dying);
    co_await round_trip(**dying);
    co_await dying->stop();
    auto const died = std::chrono::steady_clock::now();
    auto second = co_await c.new_owner().read_write_lock("rw:dying").read().try_acquire(5s, asio::use_awaitable);
    BOOST_TEST_REQUIRE(second.has_value());
    auto const held_back = std::chrono::steady_clock::now() - died;
    BOOST_TEST_MESSAGE("a dead writer held readers back for "
                       << std::chrono::duration_cast<std::chrono::milliseconds>(held_back).count() << " ms");
    BOOST_TEST((held_back < 2500ms));  // its key's 600 ms, and the reader's look a liveness later
    BOOST_TEST(redis.command({"EXISTS", "redisync_rwlock_writers:{rw:dying}"}).integer() == 0);
    co_await second->release(asio::use_awaitable);
    co_await first.release(asio::use_awaitable);
    BOOST_TEST((writer.error() == redisync::error::not_connected), writer.error().message());
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_AUTO_TEST_SUITE_END()
