// Leased permits against a real redis-server: never more than n held, permits of a dead holder
// back within its lease, the watchdog keeping them, and typed errors for bad arguments.

#include <redisync/redisync.hpp>

#include "primitives/permits/protocol.hpp"
#include "support/lock_fixture.hpp"

#include <scripts.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

namespace asio = boost::asio;
using namespace redisync::test::lock_names;
namespace proto = redisync::detail::permits_protocol;

namespace {

// An acquire of permits started in the background.
class background_permits {
 public:
  background_permits(asio::io_context& ctx, redisync::permits p, std::int64_t k)
      : state_{std::make_shared<state>(ctx.get_executor())} {
    asio::co_spawn(ctx, run(state_, std::move(p), k), asio::detached);
  }
  std::optional<held>& result() { return state_->result; }
  bool done() const { return state_->done.is_set(); }
  asio::awaitable<bool> wait(std::chrono::milliseconds limit) { return state_->done.wait(limit); }

 private:
  struct state {
    explicit state(asio::any_io_executor ex) : done{std::move(ex)} {}
    std::optional<held> result;
    error_code error;
    redisync::test::event done;
  };
  static asio::awaitable<void> run(std::shared_ptr<state> s, redisync::permits p, std::int64_t k) {
    auto [ec, h] = co_await p.acquire(k, asio::as_tuple(asio::use_awaitable));
    s->error = ec;
    if (!ec) s->result = std::move(h);
    s->done.notify();
  }
  std::shared_ptr<state> state_;
};

std::int64_t holders_in(redis_server const& redis, std::string const& name) {
  return redis.command({"ZCARD", proto::leases_key_of(name)}).integer();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(leased_permits)

BOOST_FIXTURE_TEST_CASE(never_more_than_the_permits_are_held_and_a_release_lets_a_waiter_in, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto const sem = c.new_owner().permits("sem:a");
    BOOST_TEST(co_await sem.try_set_permits(3, asio::use_awaitable));
    BOOST_TEST(!co_await sem.try_set_permits(5, asio::use_awaitable));
    std::vector<held> holds;
    for (int i = 0; i < 3; ++i) holds.push_back(co_await c.new_owner().permits("sem:a").acquire(1, asio::use_awaitable));
    BOOST_TEST(co_await sem.available_permits(asio::use_awaitable) == 0);
    BOOST_TEST(holds[0].token() < holds[1].token());
    BOOST_TEST(holds[1].token() < holds[2].token());
    auto none = co_await sem.try_acquire(1, 0ms, asio::use_awaitable);
    BOOST_TEST(!none.has_value());
    background_permits two{ctx, c.new_owner().permits("sem:a"), 2};
    co_await holds[0].release(asio::use_awaitable);
    // One permit free: the waiter for two still waits.
    BOOST_TEST(!co_await two.wait(300ms));
    co_await holds[1].release(asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await two.wait(5s));
    BOOST_TEST_REQUIRE(two.result().has_value());
    BOOST_TEST(two.result()->token() > holds[2].token());
    BOOST_TEST(holders_in(redis, "sem:a") == 2);
    co_await two.result()->release(asio::use_awaitable);
    co_await holds[2].release(asio::use_awaitable);
    BOOST_TEST(co_await sem.available_permits(asio::use_awaitable) == 3);
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis, {"sem:a"});
  });
}

// Tasks of one client that take turns on fewer permits than they are: every permit stays in use.
// Releases that free permits at the same time (no hand-off: after max_local_handoffs in a row,
// the next release publishes the permit it frees) each wake another waiter; asking the same first
// waiter again left permits free for good while the rest slept (W4 ran on two of its four).
BOOST_FIXTURE_TEST_CASE(tasks_taking_turns_keep_every_permit_in_use, lock_env) {
  run(
      [&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
        constexpr int permits = 4, tasks = 12, rounds = 800;
        co_await c.new_owner().permits("sem:turns").try_set_permits(permits, asio::use_awaitable);
        int started = 0, in_use = 0, most_in_second_half = 0, finished = 0;
        redisync::test::event all_finished{ctx.get_executor()};
        auto take_turns = [&]() -> asio::awaitable<void> {
          auto const p = c.new_owner().permits("sem:turns");
          while (started < rounds) {
            bool const counted = ++started > rounds / 2;
            auto h = co_await p.acquire(1, asio::use_awaitable);
            ++in_use;
            if (counted) most_in_second_half = std::max(most_in_second_half, in_use);
            co_await redisync::test::round_trip(c);  // the work done under the permit
            --in_use;
            co_await h.release(asio::use_awaitable);
          }
          if (++finished == tasks) all_finished.notify();
        };
        for (int i = 0; i < tasks; ++i) asio::co_spawn(ctx, take_turns(), asio::detached);
        bool const done = co_await all_finished.wait(60s);
        BOOST_TEST_REQUIRE(done);
        BOOST_TEST(most_in_second_half == permits);
        co_await c.flush_subscriptions(asio::use_awaitable);
        redisync::test::expect_nothing_left(redis, {"sem:turns"});
      },
      [](redisync::config& cfg) { cfg.max_local_handoffs = 2; });
}

// Grants merged into one script call share one reading of server time: each token after the
// first is the last + 1, kept by the call instead of read back with a command of its own. The
// counter is written ahead to the end of a token's ten, so the tokens up to there cost no write,
// and it keeps a lease's life at least; a later call's tokens are larger still. The leases that
// ended are looked for once per call (a lease granted since ends later).
BOOST_FIXTURE_TEST_CASE(grants_of_one_call_write_the_token_counter_once_a_ten_and_look_at_the_leases_once, lock_env) {
  std::string const name = "sem:merged";
  redis.command({"HSET", name, "permits", "4"});
  // A counter a second or more ahead of server time, at the start of a ten: the tokens follow it.
  auto const now = redis.command({"TIME"});
  auto const ahead = (std::stoull(std::string{now.elements()[0].text()}) + 2) * 1000000;
  redis.command({"SET", proto::token_key_of(name), std::to_string(ahead)});
  auto grant_call = [&](int first, int count) {
    std::vector<std::string> call{"EVAL", std::string{redisync::detail::scripts::permits_calls.source},
                                  std::to_string(4 * count)};
    for (int i = 0; i < count; ++i) {
      for (auto const& key : {name, proto::leases_key_of(name), proto::holders_key_of(name), proto::token_key_of(name)}) {
        call.push_back(key);
      }
    }
    for (int i = first; i < first + count; ++i) {
      for (auto const& arg : {std::string{"acquire"}, "id-" + std::to_string(i), std::string{"1"}, std::string{"30000"},
                              proto::channel_of(name), std::string{}}) {
        call.push_back(arg);
      }
    }
    return redis.command(call);
  };
  auto const sets_before = redisync::test::command_calls(redis, "set");
  auto const looks_before = redisync::test::command_calls(redis, "zrangebyscore");
  auto const replies = grant_call(0, 3);
  // The first write reads the counter back; the second reserves the ten of the token after it.
  BOOST_TEST(redisync::test::command_calls(redis, "set") - sets_before == 2);
  BOOST_TEST(redisync::test::command_calls(redis, "zrangebyscore") - looks_before == 1);
  BOOST_TEST_REQUIRE(replies.elements().size() == 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    auto const& r = replies.elements()[i];
    BOOST_TEST_REQUIRE(r.elements().size() == 2u);
    BOOST_TEST(r.elements()[0].integer() == 1);
    BOOST_TEST(r.elements()[1].text() == std::to_string(ahead + 1 + i));
  }
  BOOST_TEST(redis.command({"GET", proto::token_key_of(name)}).text() == std::to_string(ahead + 9));
  BOOST_TEST(redis.command({"PTTL", proto::token_key_of(name)}).integer() > 30000);
  // The next call goes on past what the last one reserved.
  auto const next = grant_call(3, 1);
  BOOST_TEST_REQUIRE(next.elements().size() == 2u);
  BOOST_TEST(next.elements()[1].text() == std::to_string(ahead + 10));
  BOOST_TEST(redis.command({"GET", proto::token_key_of(name)}).text() == std::to_string(ahead + 19));
}

BOOST_FIXTURE_TEST_CASE(the_permits_of_a_holder_that_stopped_renewing_come_back_within_its_lease, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto const sem = c.new_owner().permits("sem:dead");
    co_await sem.try_set_permits(1, asio::use_awaitable);
    // A holder with a fixed lease and no watchdog: a client that died.
    running_client other{ctx, fast_config(redis)};
    auto dead = co_await other->new_owner().permits("sem:dead").acquire(1, 400ms, asio::use_awaitable);
    auto const start = std::chrono::steady_clock::now();
    auto got = co_await sem.try_acquire(1, 5s, asio::use_awaitable);
    auto const waited = std::chrono::steady_clock::now() - start;
    BOOST_TEST_REQUIRE(got.has_value());
    BOOST_TEST_MESSAGE("the permit came back after " << std::chrono::duration_cast<std::chrono::milliseconds>(waited).count() << " ms");
    BOOST_TEST((waited < 2s));
    BOOST_TEST(got->token() > dead.token());
    BOOST_TEST((dead.status() == hold_status::lost));
    auto [ec] = co_await dead.release(tuple_awaitable);
    BOOST_TEST((ec == error::lease_lost));
    co_await got->release(asio::use_awaitable);
    co_await other.stop();
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis, {"sem:dead"});
  });
}

BOOST_FIXTURE_TEST_CASE(a_holder_past_its_lease_is_told_lost_and_its_fenced_write_is_refused, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto const sem = c.new_owner().permits("{sem:fence}");
    co_await sem.try_set_permits(1, asio::use_awaitable);
    // A holder that stopped renewing (a paused process): a fixed lease, outlived.
    running_client paused{ctx, fast_config(redis)};
    auto stale = co_await paused->new_owner().permits("{sem:fence}").acquire(1, 300ms, asio::use_awaitable);
    auto fresh = co_await sem.try_acquire(1, 5s, asio::use_awaitable);
    BOOST_TEST_REQUIRE(fresh.has_value());
    BOOST_TEST(fresh->token() > stale.token());
    BOOST_TEST((stale.status() == hold_status::lost));
    auto const written = co_await c.fenced_set(
        {.fence_key = "{sem:fence}:fence", .key = "{sem:fence}:value", .value = "new", .token = fresh->token()},
        asio::use_awaitable);
    BOOST_TEST(written);
    auto const late = co_await paused->fenced_set(
        {.fence_key = "{sem:fence}:fence", .key = "{sem:fence}:value", .value = "stale", .token = stale.token()},
        asio::use_awaitable);
    BOOST_TEST(!late);
    BOOST_TEST(redis.command({"GET", "{sem:fence}:value"}).text() == "new");
    co_await fresh->release(asio::use_awaitable);
    co_await paused.stop();
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis, {"{sem:fence}", "{sem:fence}:fence", "{sem:fence}:value"});
  });
}

BOOST_FIXTURE_TEST_CASE(the_watchdog_keeps_permits_for_many_leases_and_a_permit_taken_away_is_lost, lock_env) {
  run(
      [&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
        auto const sem = c.new_owner().permits("sem:dog");
        co_await sem.try_set_permits(2, asio::use_awaitable);
        auto kept = co_await sem.acquire(1, asio::use_awaitable);
        auto taken = co_await sem.acquire(1, asio::use_awaitable);
        auto const renewed_before = c.metrics().renewed_holds;
        auto const renewed = [&] { return c.metrics().renewed_holds >= renewed_before + 2 * 10; };
        co_await redisync::test::wait_until(renewed, 5s);  // ten leases
        BOOST_TEST((kept.status() == hold_status::held));
        BOOST_TEST(holders_in(redis, "sem:dog") == 2);
        // A permit's lease ends on the server (as if its renewals had not come): its holder is told
        // at the next renewal, and the next call gives it back.
        redis.command(std::vector<std::string>{"ZADD", proto::leases_key_of("sem:dog"), "1", taken.owner_id()});
        auto [ec, end] = co_await taken.wait_lost(tuple_awaitable);
        BOOST_TEST(!ec);
        BOOST_TEST((end == hold_status::lost));
        BOOST_TEST((kept.status() == hold_status::held));
        co_await kept.release(asio::use_awaitable);
        BOOST_TEST(redis.command({"EXISTS", proto::leases_key_of("sem:dog")}).integer() == 0);
        co_await c.flush_subscriptions(asio::use_awaitable);
        redisync::test::expect_nothing_left(redis, {"sem:dog"});
      },
      [](redisync::config& cfg) { cfg.watchdog_lease = 300ms; });
}

BOOST_FIXTURE_TEST_CASE(bad_arguments_and_wrong_types_get_typed_errors_and_change_nothing, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto const sem = c.new_owner().permits("sem:bad");
    co_await sem.try_set_permits(2, asio::use_awaitable);
    auto [zero, h0] = co_await sem.acquire(0, tuple_awaitable);
    BOOST_TEST((zero == error::invalid_argument));
    auto [too_many, h1] = co_await sem.acquire(3, tuple_awaitable);
    BOOST_TEST((too_many == error::too_many_permits));
    auto [no_lease, h2] = co_await sem.acquire(1, 0ms, tuple_awaitable);
    BOOST_TEST((no_lease == error::invalid_argument));
    auto [below, total] = co_await sem.add_permits(-3, tuple_awaitable);
    BOOST_TEST((below == error::too_many_permits));
    auto [negative, set] = co_await sem.try_set_permits(-1, tuple_awaitable);
    BOOST_TEST((negative == error::invalid_argument));
    BOOST_TEST(co_await sem.available_permits(asio::use_awaitable) == 2);
    BOOST_TEST(co_await sem.add_permits(1, asio::use_awaitable) == 3);
    redis.command({"SET", "sem:string", "1"});
    auto [wrong, h3] = co_await c.new_owner().permits("sem:string").acquire(1, tuple_awaitable);
    BOOST_TEST((wrong == error::wrong_type));
    auto [unset, h4] = co_await c.new_owner().permits("sem:unset").try_acquire(1, 0ms, tuple_awaitable);
    BOOST_TEST((unset == error::too_many_permits));
    redisync::test::expect_nothing_left(redis, {"sem:bad", "sem:string"});
  });
}

BOOST_FIXTURE_TEST_CASE(with_permit_runs_the_body_holding_the_permits_and_gives_them_back, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto const sem = c.new_owner().permits("sem:with");
    co_await sem.try_set_permits(3, asio::use_awaitable);
    auto body = [&](held& h) -> asio::awaitable<std::int64_t> {
      BOOST_TEST(h.is_held());
      co_return co_await sem.available_permits(asio::use_awaitable);
    };
    auto const free_inside = co_await redisync::with_permit(sem, 2, body);
    BOOST_TEST(free_inside == 1);
    BOOST_TEST(co_await sem.available_permits(asio::use_awaitable) == 3);
    redisync::test::expect_nothing_left(redis, {"sem:with"});
  });
}

BOOST_AUTO_TEST_SUITE_END()
