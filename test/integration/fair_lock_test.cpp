// The fair lock against a real redis-server. Each waiter has a client of its own, so each has its
// own connection, as waiters in separate processes do; the process tier runs real processes.

#include <redisync/redisync.hpp>

#include "support/lock_fixture.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <memory>
#include <vector>

namespace asio = boost::asio;
using namespace redisync::test::lock_names;
using redisync::test::background_acquire;
using redisync::test::fast_config;

namespace {

std::int64_t queued(redis_server const& redis, std::string const& name) {
  return redis.command({"ZCARD", "redisync_fair_queue:{" + name + "}"}).integer();
}

bool in_queue(redis_server const& redis, std::string const& name, std::string const& owner) {
  return !redis.command({"ZSCORE", "redisync_fair_queue:{" + name + "}", owner}).is_null();
}

// `n` clients of their own, each standing for a process.
std::vector<std::unique_ptr<running_client>> clients(asio::io_context& ctx, redis_server const& redis, int n,
                                                     std::chrono::milliseconds liveness = 1000ms) {
  std::vector<std::unique_ptr<running_client>> out;
  for (int i = 0; i < n; ++i) {
    auto cfg = fast_config(redis);
    cfg.fair_waiter_liveness = liveness;
    out.push_back(std::make_unique<running_client>(ctx, cfg));
  }
  return out;
}


asio::awaitable<void> stop_all(std::vector<std::unique_ptr<running_client>>& cs) {
  for (auto& c : cs) co_await c->stop();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(fair_lock)

BOOST_FIXTURE_TEST_CASE(waiters_are_served_in_the_order_their_first_attempts_reached_redis, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto waiters = clients(ctx, redis, 6);
    for (int round = 0; round < 3; ++round) {
      auto holder = co_await c.new_owner().fair_lock("order").acquire(asio::use_awaitable);
      std::vector<std::unique_ptr<background_acquire>> pending;
      // Each starts once the one before it is queued: the arrival order is known.
      for (std::size_t i = 0; i < waiters.size(); ++i) {
        // A different client order each round, so no client is first by construction.
        auto& w = *waiters[(i + static_cast<std::size_t>(round)) % waiters.size()];
        pending.push_back(std::make_unique<background_acquire>(ctx, w->new_owner().fair_lock("order")));
        auto const placed = [&] { return queued(redis, "order") == static_cast<std::int64_t>(i + 1); };
        co_await redisync::test::wait_until(placed, 5s);
      }
      co_await holder.release(asio::use_awaitable);
      for (std::size_t i = 0; i < pending.size(); ++i) {
        BOOST_TEST_REQUIRE(co_await pending[i]->wait(10s), "waiter " << i << " was not served");
        BOOST_TEST_REQUIRE(pending[i]->result().has_value());
        // Everyone behind is still waiting: served in order.
        for (std::size_t j = i + 1; j < pending.size(); ++j) BOOST_TEST(!pending[j]->result().has_value());
        co_await pending[i]->result()->release(asio::use_awaitable);
      }
    }
    co_await stop_all(waiters);
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_FIXTURE_TEST_CASE(a_release_hands_the_lock_to_a_waiter_of_its_own_client_only_at_the_head_of_the_queue, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto other = clients(ctx, redis, 1);
    auto holder = co_await c.new_owner().fair_lock("handoff").acquire(asio::use_awaitable);
    // Queued: this client's w0, the other client's w1, this client's w2.
    std::vector<std::unique_ptr<background_acquire>> pending;
    for (int i = 0; i < 3; ++i) {
      auto& cl = i == 1 ? **other[0] : c;
      pending.push_back(std::make_unique<background_acquire>(ctx, cl.new_owner().fair_lock("handoff")));
      co_await redisync::test::wait_until([&] { return queued(redis, "handoff") == i + 1; }, 5s);
    }
    auto const handoffs_before = c.stats().handoffs;
    co_await holder.release(asio::use_awaitable);
    for (std::size_t i = 0; i < pending.size(); ++i) {
      BOOST_TEST_REQUIRE(co_await pending[i]->wait(10s), "waiter " << i << " was not served");
      for (std::size_t j = i + 1; j < pending.size(); ++j) BOOST_TEST(!pending[j]->result().has_value());
      co_await pending[i]->result()->release(asio::use_awaitable);
    }
    // w0 was the head: handed over in the release. w2 was not when w0 released (w1 was): w1 was
    // called instead, and then w2.
    BOOST_TEST(c.stats().handoffs - handoffs_before == 1u);
    co_await stop_all(other);
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_FIXTURE_TEST_CASE(a_dead_waiter_at_the_head_or_in_the_middle_is_passed_over_within_two_seconds, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto waiters = clients(ctx, redis, 4);
    auto holder = co_await c.new_owner().fair_lock("dead").acquire(asio::use_awaitable);
    std::vector<std::unique_ptr<background_acquire>> pending;
    for (std::size_t i = 0; i < waiters.size(); ++i) {
      pending.push_back(std::make_unique<background_acquire>(ctx, (*waiters[i])->new_owner().fair_lock("dead")));
      auto const placed = [&] { return queued(redis, "dead") == static_cast<std::int64_t>(i + 1); };
      co_await redisync::test::wait_until(placed, 5s);
    }
    // The head and the third die: their clients stop without leaving the queue or beating again,
    // as a killed process would.
    co_await waiters[0]->stop();
    co_await waiters[2]->stop();
    BOOST_TEST(queued(redis, "dead") == 4);
    auto const released = std::chrono::steady_clock::now();
    co_await holder.release(asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await pending[1]->wait(5s));
    auto const second_served = std::chrono::steady_clock::now() - released;
    BOOST_TEST_MESSAGE("a dead head passed over in " << std::chrono::duration_cast<std::chrono::milliseconds>(second_served).count() << " ms");
    BOOST_TEST((second_served < 2500ms));
    BOOST_TEST(!pending[3]->result().has_value());
    auto const handed = std::chrono::steady_clock::now();
    co_await pending[1]->result()->release(asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await pending[3]->wait(5s));
    auto const fourth_served = std::chrono::steady_clock::now() - handed;
    BOOST_TEST_MESSAGE("a dead middle waiter passed over in " << std::chrono::duration_cast<std::chrono::milliseconds>(fourth_served).count() << " ms");
    BOOST_TEST((fourth_served < 2500ms));
    co_await pending[3]->result()->release(asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await pending[0]->wait(5s));
    BOOST_TEST_REQUIRE(co_await pending[2]->wait(5s));
    BOOST_TEST((pending[0]->error() == error::not_connected), pending[0]->error().message());
    BOOST_TEST((pending[2]->error() == error::not_connected), pending[2]->error().message());
    co_await waiters[1]->stop();
    co_await waiters[3]->stop();
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_FIXTURE_TEST_CASE(a_waiter_that_times_out_or_is_cancelled_leaves_the_queue_at_once, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto holder = co_await c.new_owner().fair_lock("leave").acquire(asio::use_awaitable);
    // At the head: a bounded wait that runs out.
    auto first = c.new_owner();
    auto [ec, none] = co_await first.fair_lock("leave").try_acquire(200ms, tuple_awaitable);
    BOOST_TEST(!ec);
    BOOST_TEST(!none.has_value());
    co_await redisync::test::wait_until([&] { return !in_queue(redis, "leave", first.id()); }, 2s);
    // In the middle: a cancelled waiter between two others.
    background_acquire a{ctx, c.new_owner().fair_lock("leave")};
    co_await redisync::test::wait_until([&] { return queued(redis, "leave") == 1; }, 5s);
    auto middle = c.new_owner();
    asio::cancellation_signal cancel;
    std::optional<error_code> middle_error;
    middle.fair_lock("leave").acquire(asio::bind_cancellation_slot(cancel.slot(), [&](error_code e, held) { middle_error = e; }));
    co_await redisync::test::wait_until([&] { return queued(redis, "leave") == 2; }, 5s);
    background_acquire b{ctx, c.new_owner().fair_lock("leave")};
    co_await redisync::test::wait_until([&] { return queued(redis, "leave") == 3; }, 5s);
    cancel.emit(asio::cancellation_type::terminal);
    co_await redisync::test::wait_until([&] { return middle_error.has_value() && !in_queue(redis, "leave", middle.id()); }, 2s);
    BOOST_TEST((*middle_error == asio::error::operation_aborted));
    // In the middle: a bounded wait that runs out between a and b.
    auto timed = c.new_owner();
    std::optional<bool> timed_held;
    timed.fair_lock("leave").try_acquire(300ms, [&](error_code, std::optional<held> h) { timed_held = h.has_value(); });
    co_await redisync::test::wait_until([&] { return timed_held.has_value(); }, 5s);
    BOOST_TEST(!*timed_held);
    co_await redisync::test::wait_until([&] { return !in_queue(redis, "leave", timed.id()); }, 2s);
    BOOST_TEST(queued(redis, "leave") == 2);
    co_await holder.release(asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await a.wait(5s));
    co_await a.result()->release(asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await b.wait(5s));
    co_await b.result()->release(asio::use_awaitable);
    // At the head, while the lock is held: a cancelled head leaves, and the next is served when
    // the lock is free.
    holder = co_await c.new_owner().fair_lock("leave").acquire(asio::use_awaitable);
    auto head = c.new_owner();
    asio::cancellation_signal cancel_head;
    std::optional<error_code> head_error;
    head.fair_lock("leave").acquire(asio::bind_cancellation_slot(cancel_head.slot(), [&](error_code e, held) { head_error = e; }));
    co_await redisync::test::wait_until([&] { return queued(redis, "leave") == 1; }, 5s);
    background_acquire next{ctx, c.new_owner().fair_lock("leave")};
    co_await redisync::test::wait_until([&] { return queued(redis, "leave") == 2; }, 5s);
    cancel_head.emit(asio::cancellation_type::terminal);
    co_await redisync::test::wait_until([&] { return head_error.has_value() && !in_queue(redis, "leave", head.id()); }, 2s);
    co_await holder.release(asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await next.wait(5s));
    co_await next.result()->release(asio::use_awaitable);
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_FIXTURE_TEST_CASE(the_holder_reenters_past_the_queue_and_try_acquire_zero_never_jumps_it, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto others = clients(ctx, redis, 1);
    auto me = c.new_owner();
    auto outer = co_await me.fair_lock("reenter").acquire(asio::use_awaitable);
    background_acquire waiter{ctx, (*others[0])->new_owner().fair_lock("reenter")};
    co_await redisync::test::wait_until([&] { return queued(redis, "reenter") == 1; }, 5s);
    auto [ec, inner] = co_await me.fair_lock("reenter").try_acquire(0ms, tuple_awaitable);
    BOOST_TEST_REQUIRE(inner.has_value());
    BOOST_TEST(inner->token() == outer.token());
    BOOST_TEST(redisync::test::hget_count(redis, "reenter", me.id()) == 2);
    co_await inner->release(asio::use_awaitable);
    // The waiter's client dies: the lock is free, with a dead head for a liveness period.
    co_await others[0]->stop();
    co_await outer.release(asio::use_awaitable);
    auto jumper = c.new_owner();
    auto [jec, jumped] = co_await jumper.fair_lock("reenter").try_acquire(0ms, tuple_awaitable);
    BOOST_TEST(!jec);
    BOOST_TEST(!jumped.has_value());
    co_await redisync::test::wait_until([&] { return !in_queue(redis, "reenter", jumper.id()); }, 2s);
    // Once the dead head is dropped, the queue is empty and anyone may take the lock.
    co_await redisync::test::wait_until([&] { return queued(redis, "reenter") == 0; }, 5s);
    auto h = co_await jumper.fair_lock("reenter").acquire(asio::use_awaitable);
    co_await h.release(asio::use_awaitable);
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
  }, [](redisync::config& cfg) { cfg.fair_waiter_liveness = 500ms; });
}

BOOST_FIXTURE_TEST_CASE(with_lock_runs_a_body_under_a_fair_lock_and_releases_it_through_the_queue, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto others = clients(ctx, redis, 1);
    auto me = c.new_owner();
    std::optional<background_acquire> waiter;
    int const answer = co_await redisync::with_lock(me.fair_lock("body"), [&](held& h) -> asio::awaitable<int> {
      BOOST_TEST(h.is_held());
      waiter.emplace(ctx, (*others[0])->new_owner().fair_lock("body"));
      co_await redisync::test::wait_until([&] { return queued(redis, "body") == 1; }, 5s);
      co_return 42;
    });
    BOOST_TEST(answer == 42);
    // The fair release called the queued waiter.
    BOOST_TEST_REQUIRE(co_await waiter->wait(5s));
    co_await waiter->result()->release(asio::use_awaitable);
    co_await stop_all(others);
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_FIXTURE_TEST_CASE(fair_and_plain_lock_users_of_one_name_exclude_each_other, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto fair = co_await c.new_owner().fair_lock("mixed").acquire(asio::use_awaitable);
    auto [pec, plain_none] = co_await c.new_owner().lock("mixed").try_acquire(0ms, tuple_awaitable);
    BOOST_TEST(!plain_none.has_value());
    // A plain waiter is woken by the fair release when nobody is queued.
    background_acquire plain{ctx, c.new_owner().lock("mixed")};
    co_await redisync::test::wait_until([&] { return redisync::test::subscribers_of(redis, "redisson_lock__channel:{mixed}") == 1; }, 5s);
    co_await fair.release(asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await plain.wait(5s));
    // A fair waiter behind a plain holder is called by its heartbeat when the plain holder leaves.
    background_acquire fair_waiter{ctx, c.new_owner().fair_lock("mixed")};
    co_await redisync::test::wait_until([&] { return queued(redis, "mixed") == 1; }, 5s);
    BOOST_TEST(!fair_waiter.result().has_value());
    co_await plain.result()->release(asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await fair_waiter.wait(5s));
    co_await fair_waiter.result()->release(asio::use_awaitable);
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_FIXTURE_TEST_CASE(a_queue_key_of_another_type_gives_wrong_type_and_changes_nothing, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    redis.command({"SET", "redisync_fair_queue:{typed}", "mine"});
    auto lock = c.new_owner().fair_lock("typed");
    auto [ec, h] = co_await lock.acquire(tuple_awaitable);
    BOOST_TEST((ec == error::wrong_type), ec.message());
    BOOST_TEST(redis.command({"GET", "redisync_fair_queue:{typed}"}).text() == "mine");
    BOOST_TEST(redis.command({"EXISTS", "typed"}).integer() == 0);
    redis.command({"DEL", "redisync_fair_queue:{typed}"});
    redis.command({"SET", "typed", "x"});
    auto [lec, lh] = co_await lock.acquire(tuple_awaitable);
    BOOST_TEST((lec == error::wrong_type), lec.message());
    BOOST_TEST(redis.command({"GET", "typed"}).text() == "x");
    redis.command({"DEL", "typed"});
    auto [bad, none] = co_await c.new_owner().fair_lock("").try_acquire(0ms, tuple_awaitable);
    BOOST_TEST((bad == error::invalid_argument));
    auto [lease, none2] = co_await lock.try_acquire(0ms, -5ms, tuple_awaitable);
    BOOST_TEST((lease == error::invalid_argument));
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_FIXTURE_TEST_CASE(a_waiter_whose_place_was_lost_queues_again_and_keeps_its_new_place, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto waiters = clients(ctx, redis, 2);
    auto holder = co_await c.new_owner().fair_lock("lost").acquire(asio::use_awaitable);
    background_acquire a{ctx, (*waiters[0])->new_owner().fair_lock("lost")};
    co_await redisync::test::wait_until([&] { return queued(redis, "lost") == 1; }, 5s);
    background_acquire b{ctx, (*waiters[1])->new_owner().fair_lock("lost")};
    co_await redisync::test::wait_until([&] { return queued(redis, "lost") == 2; }, 5s);
    // The queue is gone (as after a restart without persistence): the heartbeats find out.
    redis.command({"DEL", "redisync_fair_queue:{lost}", "redisync_fair_alive:{lost}"});
    co_await redisync::test::wait_until([&] { return queued(redis, "lost") == 2; }, 5s);
    // Past the keys' expiry (two liveness periods) both are still queued: their new places are kept
    // alive.
    co_await redisync::test::sleep_for(2500ms);
    BOOST_TEST(queued(redis, "lost") == 2);
    co_await holder.release(asio::use_awaitable);
    for (int served = 0; served < 2; ++served) {
      co_await redisync::test::wait_until([&] { return a.result().has_value() || b.result().has_value(); }, 5s);
      auto& first = a.result().has_value() ? a : b;
      co_await first.result()->release(asio::use_awaitable);
      first.result().reset();
    }
    co_await stop_all(waiters);
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_FIXTURE_TEST_CASE(after_a_restart_that_lost_the_queue_live_waiters_queue_again_and_are_served, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto waiters = clients(ctx, redis, 2, 300ms);
    auto holder = co_await c.new_owner().fair_lock("restart").acquire(asio::use_awaitable);
    background_acquire a{ctx, (*waiters[0])->new_owner().fair_lock("restart")};
    co_await redisync::test::wait_until([&] { return queued(redis, "restart") == 1; }, 5s);
    background_acquire b{ctx, (*waiters[1])->new_owner().fair_lock("restart")};
    co_await redisync::test::wait_until([&] { return queued(redis, "restart") == 2; }, 5s);
    redis.kill_hard();
    redis.start();
    // The holder's lock is gone with the data; the waiters find their places gone and queue again,
    // in the order their new attempts arrive: each is served, one at a time.
    for (int served = 0; served < 2; ++served) {
      co_await redisync::test::wait_until([&] { return a.result().has_value() || b.result().has_value(); }, 15s);
      BOOST_TEST(!(a.result().has_value() && b.result().has_value()));
      auto& first = a.result().has_value() ? a : b;
      if (served == 0) {
        // The other queued again, and its heartbeats keep it queued for many liveness periods.
        auto const other = a.result().has_value() ? std::string{"b"} : std::string{"a"};
        co_await redisync::test::wait_until([&] { return queued(redis, "restart") == 1; }, 5s);
        co_await redisync::test::sleep_for(1500ms);
        BOOST_TEST(queued(redis, "restart") == 1, "waiter " << other << " was dropped from the queue");
      }
      co_await first.result()->release(asio::use_awaitable);
      first.result().reset();
    }
    BOOST_TEST((!a.error() && !b.error()));
    co_await redisync::test::wait_until([&] { return holder.status() == hold_status::lost; }, 35s);
    co_await stop_all(waiters);
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_AUTO_TEST_SUITE_END()
