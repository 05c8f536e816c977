// Multi-locks against a real redis-server: members of one slot taken in one script call, all or
// none; a busy member waited for while nothing after it is held; two multi-locks over the same
// names in opposite orders never deadlock; a cancellation, a timeout or an error at any step
// leaves nothing held; mixed kinds, nesting, loss and with_locks.

#include <redisync/redisync.hpp>

#include "support/lock_fixture.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

namespace asio = boost::asio;
using namespace redisync::test::lock_names;
using redisync::multi_held;

namespace {

std::vector<std::string> const names{"multi:a", "multi:b", "multi:c", "multi:d"};

// The number of script calls the server has run (EVALSHA, or EVAL for a script it did not have).
std::int64_t script_calls(redis_server const& redis) {
  return redisync::test::command_calls(redis, "evalsha") + redisync::test::command_calls(redis, "eval");
}

// Whether `owner` holds none of `names` on the server.
bool holds_none(redis_server const& redis, std::string const& owner, std::vector<std::string> const& of = names) {
  return std::all_of(of.begin(), of.end(),
                     [&](auto const& n) { return redisync::test::hget_count(redis, n, owner) == 0; });
}

// A multi-lock's acquire in the background, cancellable through `cancel`.
struct background_multi {
  explicit background_multi(asio::any_io_executor ex) : done{std::move(ex)} {}
  error_code error;
  std::optional<multi_held> held;
  asio::cancellation_signal cancel;
  redisync::test::event done;
};

std::shared_ptr<background_multi> acquire_in_background(asio::io_context& ctx, redisync::multi_lock m,
                                                        std::optional<std::chrono::milliseconds> wait = {}) {
  auto state = std::make_shared<background_multi>(ctx.get_executor());
  auto run = [](std::shared_ptr<background_multi> s, redisync::multi_lock m,
                std::optional<std::chrono::milliseconds> wait) -> asio::awaitable<void> {
    auto token = asio::bind_cancellation_slot(s->cancel.slot(), asio::as_tuple(asio::use_awaitable));
    if (wait) {
      auto [ec, h] = co_await m.try_acquire(*wait, token);
      s->error = ec;
      s->held = std::move(h);
    } else {
      auto [ec, h] = co_await m.acquire(token);
      s->error = ec;
      if (!ec) s->held = std::move(h);
    }
    s->done.notify();
  };
  asio::co_spawn(ctx, run(state, std::move(m), wait), asio::detached);
  return state;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(multi_lock)

BOOST_FIXTURE_TEST_CASE(members_of_one_slot_are_taken_in_one_script_call_and_released_together, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto const me = c.new_owner();
    auto warm = co_await me.locks(names).acquire(asio::use_awaitable);  // the script is loaded
    co_await warm.release(asio::use_awaitable);
    auto const before = script_calls(redis);
    auto h = co_await me.locks(names).acquire(asio::use_awaitable);
    BOOST_TEST(script_calls(redis) - before == 1);
    BOOST_TEST_REQUIRE(h.members().size() == names.size());
    for (std::size_t i = 0; i < names.size(); ++i) {
      BOOST_TEST(h.members()[i].name() == names[i]);  // in the order given
      BOOST_TEST(h.tokens()[i] > 0u);
      BOOST_TEST(redisync::test::hget_count(redis, names[i], me.id()) == 1);
      BOOST_TEST(me.holds(names[i]));
    }
    BOOST_TEST((h.status() == hold_status::held));
    BOOST_TEST(h.is_held());
    co_await h.release(asio::use_awaitable);
    BOOST_TEST((h.status() == hold_status::released));
    BOOST_TEST(holds_none(redis, me.id()));
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_FIXTURE_TEST_CASE(a_busy_member_takes_nothing_and_the_multi_lock_waits_for_it, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto const other = c.new_owner();
    auto const me = c.new_owner();
    auto c_held = co_await other.lock("multi:c").acquire(asio::use_awaitable);
    auto const none = co_await me.locks(names).try_acquire(0ms, asio::use_awaitable);
    BOOST_TEST(!none.has_value());
    BOOST_TEST(holds_none(redis, me.id()));  // all or none: a, b and d were not taken either
    auto const waiter = acquire_in_background(ctx, me.locks(names));
    // It waits for c holding only what comes before c in the global order.
    co_await redisync::test::wait_until([&] { return c.metrics().waiters == 1; }, 5s);
    BOOST_TEST(holds_none(redis, me.id(), {"multi:c", "multi:d"}));
    co_await c_held.release(asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await waiter->done.wait(5s));
    BOOST_TEST(!waiter->error);
    BOOST_TEST_REQUIRE(waiter->held.has_value());
    BOOST_TEST(waiter->held->is_held());
    BOOST_TEST(waiter->held->tokens()[2] > c_held.token());
    co_await waiter->held->release(asio::use_awaitable);
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_FIXTURE_TEST_CASE(reentrant_fair_and_write_members_are_taken_as_one_and_exclude_each_kind, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto const me = c.new_owner();
    auto const other = c.new_owner();
    std::vector<redisync::lock> const members{me.lock("mix:plain"), me.fair_lock("mix:fair"),
                                              me.read_write_lock("mix:rw").write()};
    auto h = co_await me.locks(members).acquire(asio::use_awaitable);
    BOOST_TEST(redisync::test::hget_count(redis, "mix:plain", me.id()) == 1);
    BOOST_TEST(redisync::test::hget_count(redis, "mix:fair", me.id()) == 1);
    BOOST_TEST(redisync::test::hget_count(redis, "mix:rw", me.id() + ":write") == 1);
    BOOST_TEST(redis.command({"HGET", "mix:rw", "mode"}).text() == "write");
    BOOST_TEST(!(co_await other.lock("mix:plain").try_acquire(0ms, asio::use_awaitable)).has_value());
    BOOST_TEST(!(co_await other.fair_lock("mix:fair").try_acquire(0ms, asio::use_awaitable)).has_value());
    BOOST_TEST(!(co_await other.read_write_lock("mix:rw").read().try_acquire(0ms, asio::use_awaitable)).has_value());
    co_await h.release(asio::use_awaitable);
    // Each member is free for its own kind again.
    auto w = co_await other.read_write_lock("mix:rw").write().try_acquire(0ms, asio::use_awaitable);
    BOOST_TEST_REQUIRE(w.has_value());
    BOOST_TEST(w->token() > h.tokens()[2]);
    co_await w->release(asio::use_awaitable);
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_FIXTURE_TEST_CASE(a_fair_member_with_waiters_in_its_queue_is_waited_for_in_that_queue, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto const holder = c.new_owner();
    auto const queued = c.new_owner();
    auto const me = c.new_owner();
    auto first = co_await holder.fair_lock("mixq:fair").acquire(asio::use_awaitable);
    redisync::test::background_acquire before_me{ctx, queued.fair_lock("mixq:fair")};
    co_await redisync::test::wait_until([&] { return c.metrics().waiters == 1; }, 5s);
    auto const waiter = acquire_in_background(ctx, me.locks({me.lock("mixq:plain"), me.fair_lock("mixq:fair")}));
    co_await redisync::test::wait_until([&] { return c.metrics().waiters == 2; }, 5s);
    co_await first.release(asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await before_me.wait(5s));  // served in arrival order
    BOOST_TEST(!waiter->done.is_set());
    co_await before_me.result()->release(asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await waiter->done.wait(5s));
    BOOST_TEST_REQUIRE(waiter->held.has_value());
    co_await waiter->held->release(asio::use_awaitable);
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_FIXTURE_TEST_CASE(two_multi_locks_over_the_same_names_in_opposite_orders_never_deadlock, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    running_client other_client{ctx, fast_config(redis)};
    std::vector<std::string> reversed{names.rbegin(), names.rend()};
    int rounds_done = 0;
    auto loop = [&](redisync::owner me, std::vector<std::string> order) -> asio::awaitable<void> {
      for (int i = 0; i < 40; ++i) {
        // The two share b and c; each also takes a name the other does not.
        auto h = co_await me.locks(order).acquire(asio::use_awaitable);
        co_await asio::post(asio::use_awaitable);
        co_await h.release(asio::use_awaitable);
      }
      ++rounds_done;
    };
    auto one = asio::co_spawn(ctx, loop(c.new_owner(), {names[0], names[1], names[2]}), asio::deferred);
    auto two = asio::co_spawn(ctx, loop(other_client->new_owner(), {reversed[0], reversed[1], reversed[2]}),
                              asio::deferred);
    auto both = asio::experimental::make_parallel_group(std::move(one), std::move(two));
    co_await both.async_wait(asio::experimental::wait_for_all(), asio::use_awaitable);
    BOOST_TEST(rounds_done == 2);
    co_await other_client.stop();
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
  });
}

// A holder has every name; the multi-lock waits for them one by one as the holder lets go of them
// in order. Cancelled after it took `taken` of them (-1: at once, before its first call's reply),
// it completes with operation_aborted and leaves nothing held.
BOOST_FIXTURE_TEST_CASE(a_cancellation_at_every_step_leaves_nothing_held, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    running_client holder_client{ctx, fast_config(redis)};
    for (int taken = -1; taken < static_cast<int>(names.size()); ++taken) {
      BOOST_TEST_CONTEXT("cancelled after " << taken << " members were taken") {
        auto const holder = holder_client->new_owner();
        std::vector<held> blocking;
        for (auto const& n : names) blocking.push_back(co_await holder.lock(n).acquire(asio::use_awaitable));
        auto const me = c.new_owner();
        auto const waiter = acquire_in_background(ctx, me.locks(names));
        if (taken < 0) {
          waiter->cancel.emit(asio::cancellation_type::terminal);
        } else {
          for (int i = 0; i < taken; ++i) {
            co_await blocking[i].release(asio::use_awaitable);
            co_await redisync::test::wait_until([&] { return me.holds(names[i]); }, 5s);
          }
          co_await redisync::test::wait_until([&] { return c.metrics().waiters == 1; }, 5s);
          waiter->cancel.emit(asio::cancellation_type::terminal);
        }
        BOOST_TEST_REQUIRE(co_await waiter->done.wait(5s));
        BOOST_TEST((waiter->error == asio::error::operation_aborted));
        for (auto const& n : names) BOOST_TEST(!me.holds(n));
        BOOST_TEST(holds_none(redis, me.id()));
        for (auto& b : blocking) {
          if (b.is_held()) co_await b.release(asio::use_awaitable);
        }
        // Nothing is left for anyone to wait for.
        auto all = co_await c.new_owner().locks(names).try_acquire(0ms, asio::use_awaitable);
        BOOST_TEST_REQUIRE(all.has_value());
        co_await all->release(asio::use_awaitable);
      }
    }
    co_await holder_client.stop();
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_FIXTURE_TEST_CASE(a_bounded_wait_that_runs_out_releases_the_members_it_took, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto const holder = c.new_owner();
    auto const me = c.new_owner();
    auto d = co_await holder.lock("multi:d").acquire(asio::use_awaitable);
    auto const started = std::chrono::steady_clock::now();
    auto const got = co_await me.locks(names).try_acquire(300ms, asio::use_awaitable);
    BOOST_TEST(!got.has_value());
    BOOST_TEST((std::chrono::steady_clock::now() - started >= 290ms));
    BOOST_TEST(holds_none(redis, me.id()));
    co_await d.release(asio::use_awaitable);
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_FIXTURE_TEST_CASE(a_member_of_the_wrong_type_fails_the_acquire_and_takes_nothing, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    redis.command({"SET", "multi:c", "not a lock"});
    auto const me = c.new_owner();
    auto [ec, h] = co_await me.locks(names).acquire(tuple_awaitable);
    BOOST_TEST((ec == error::wrong_type));
    BOOST_TEST(holds_none(redis, me.id(), {"multi:a", "multi:b", "multi:d"}));
    BOOST_TEST(redis.command({"GET", "multi:c"}).text() == "not a lock");  // kept
    redis.command({"DEL", "multi:c"});
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_FIXTURE_TEST_CASE(bad_arguments_get_invalid_argument_before_any_call, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto const me = c.new_owner();
    auto const other = c.new_owner();
    auto const before = script_calls(redis);
    auto const refused = [&](redisync::multi_lock m) -> asio::awaitable<error_code> {
      auto [ec, h] = co_await m.try_acquire(0ms, tuple_awaitable);
      co_return ec;
    };
    // Made before the co_await: GCC 12 cannot keep a braced list of literals in a coroutine frame.
    std::vector<redisync::multi_lock> const bad{
        me.locks(std::vector<redisync::lock>{}),                        // no member
        me.locks(std::vector<std::string>{"x", "x"}),                   // a name twice
        me.locks({me.lock("x"), me.read_write_lock("y").read()}),       // a read
        me.locks({me.lock("x"), other.lock("y")}),                      // another owner's handle
        me.locks(std::vector<std::string>{"x", ""}),                    // an empty name
    };
    for (auto const& m : bad) BOOST_TEST((co_await refused(m) == error::invalid_argument));
    auto const two = me.locks(std::vector<std::string>{"x", "y"});
    auto [ec, h] = co_await two.try_acquire(0ms, 0ms, tuple_awaitable);
    BOOST_TEST((ec == error::invalid_argument));  // lease 0
    BOOST_TEST(script_calls(redis) == before);
  });
}

BOOST_FIXTURE_TEST_CASE(a_multi_lock_nests_in_holds_its_owner_has, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto const me = c.new_owner();
    auto a = co_await me.lock("multi:a").acquire(asio::use_awaitable);
    auto h = co_await me.locks(names).acquire(asio::use_awaitable);
    BOOST_TEST(redisync::test::hget_count(redis, "multi:a", me.id()) == 2);
    BOOST_TEST(h.tokens()[0] == a.token());  // a nested level has the token of its hold
    co_await h.release(asio::use_awaitable);
    BOOST_TEST(redisync::test::hget_count(redis, "multi:a", me.id()) == 1);
    BOOST_TEST(a.is_held());
    co_await a.release(asio::use_awaitable);
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_FIXTURE_TEST_CASE(the_hold_is_lost_when_a_member_is_lost, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto const me = c.new_owner();
    auto h = co_await me.locks(names).acquire(400ms, asio::use_awaitable);  // a fixed lease, no watchdog
    auto const end = co_await h.wait_lost(asio::use_awaitable);
    BOOST_TEST((end == hold_status::lost));
    BOOST_TEST((h.status() == hold_status::lost));
    BOOST_TEST(!h.is_held());
    auto [ec] = co_await h.release(tuple_awaitable);
    BOOST_TEST((ec == error::lease_lost));
    // The keys expire with the lease, a little after the client gave the hold up.
    co_await redisync::test::wait_until([&] { return redisync::test::lock_keys(redis).empty(); }, 2s);
  });
}

BOOST_FIXTURE_TEST_CASE(with_locks_runs_the_body_holding_every_member_and_releases_them, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto const me = c.new_owner();
    auto const tokens = co_await redisync::with_locks(
        me.locks(names), [&](multi_held const& h) -> asio::awaitable<std::vector<std::uint64_t>> {
          for (auto const& n : names) BOOST_TEST(redisync::test::hget_count(redis, n, me.id()) == 1);
          co_return h.tokens();
        });
    BOOST_TEST(tokens.size() == names.size());
    BOOST_TEST(holds_none(redis, me.id()));
    auto const holder = c.new_owner();
    auto b = co_await holder.lock("multi:b").acquire(asio::use_awaitable);
    bool ran = false;
    auto body = [&]() -> asio::awaitable<void> {
      ran = true;
      co_return;
    };
    auto [failure] = co_await redisync::with_locks(me.locks(names), {.wait = 100ms}, body,
                                                   asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(!ran);
    BOOST_TEST_REQUIRE(static_cast<bool>(failure));
    BOOST_CHECK_THROW(std::rethrow_exception(failure), boost::system::system_error);
    BOOST_TEST(holds_none(redis, me.id()));
    co_await b.release(asio::use_awaitable);
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_AUTO_TEST_SUITE_END()
