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

// Whether a waiter of `owner` is queued (as `client/owner`).
bool in_queue(redis_server const& redis, std::string const& name, std::string const& owner) {
  auto const members = redis.command({"ZRANGE", "redisync_fair_queue:{" + name + "}", "0", "-1"});
  return std::any_of(members.elements().begin(), members.elements().end(),
                     [&](auto const& m) { return m.text().ends_with("/" + owner); });
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

// The end of a test: the other clients stop, and nothing is left on the server.
asio::awaitable<void> end_clean(std::vector<std::unique_ptr<running_client>>& others, redisync::client& c,
                                redis_server const& redis) {
  co_await stop_all(others);
  co_await c.flush_subscriptions(asio::use_awaitable);
  redisync::test::expect_nothing_left(redis);
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
    auto const handoffs_before = c.metrics().handoffs;
    co_await holder.release(asio::use_awaitable);
    for (std::size_t i = 0; i < pending.size(); ++i) {
      BOOST_TEST_REQUIRE(co_await pending[i]->wait(10s), "waiter " << i << " was not served");
      for (std::size_t j = i + 1; j < pending.size(); ++j) BOOST_TEST(!pending[j]->result().has_value());
      co_await pending[i]->result()->release(asio::use_awaitable);
    }
    // w0 was the head: handed over in the release. w2 was not when w0 released (w1 was): w1 was
    // called instead, and then w2.
    BOOST_TEST(c.metrics().handoffs - handoffs_before == 1u);
    co_await end_clean(other, c, redis);
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
    // as a killed process would. (Not while a look of theirs is in flight, which would be undone: a
    // waiter's subscription is confirmed before the first reply, its look then answered before the
    // second.)
    for (auto const dies : {0, 2}) {
      co_await redisync::test::round_trip(**waiters[dies]);
      co_await redisync::test::round_trip(**waiters[dies]);
    }
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

BOOST_FIXTURE_TEST_CASE(waiting_costs_one_beat_per_client_and_period_whatever_the_number_of_waiters, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto waiters = clients(ctx, redis, 1, 900ms);
    auto& w = *waiters[0];
    // A lease without the watchdog: the waiters' bounds are 20 s away, so nothing but beats runs.
    auto holder = co_await c.new_owner().fair_lock("many").acquire(20s, asio::use_awaitable);
    std::vector<std::unique_ptr<background_acquire>> pending;
    for (int i = 0; i < 40; ++i) pending.push_back(std::make_unique<background_acquire>(ctx, w->new_owner().fair_lock("many")));
    co_await redisync::test::wait_until([&] { return queued(redis, "many") == 40; }, 5s);
    auto const before = w->metrics();
    co_await redisync::test::sleep_for(2700ms);
    auto const after = w->metrics();
    // A beat every third of the liveness period: 9 in 2.7 s, one key each, not one per waiter.
    auto const beats = after.renewal_calls - before.renewal_calls;
    BOOST_TEST_MESSAGE(beats << " beats for 40 waiters in 2.7 s");
    BOOST_TEST(beats >= 4u);
    BOOST_TEST(beats <= 14u);
    BOOST_TEST(after.renewed_holds - before.renewed_holds == beats);
    co_await holder.release(asio::use_awaitable);
    for (auto& p : pending) {
      BOOST_TEST_REQUIRE(co_await p->wait(10s));
      co_await p->result()->release(asio::use_awaitable);
    }
    co_await end_clean(waiters, c, redis);
  });
}

BOOST_FIXTURE_TEST_CASE(the_waiters_of_a_dead_client_leave_the_queue_together, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto waiters = clients(ctx, redis, 2, 500ms);
    auto holder = co_await c.new_owner().fair_lock("together").acquire(asio::use_awaitable);
    // Queued: three waiters of the first client, one of the second, one more of the first.
    std::vector<std::unique_ptr<background_acquire>> pending;
    for (int i = 0; i < 5; ++i) {
      auto& cl = i == 3 ? *waiters[1] : *waiters[0];
      pending.push_back(std::make_unique<background_acquire>(ctx, cl->new_owner().fair_lock("together")));
      co_await redisync::test::wait_until([&] { return queued(redis, "together") == i + 1; }, 5s);
    }
    // The first client dies without leaving; its key lapses half a second later.
    co_await waiters[0]->stop();
    co_await redisync::test::wait_until([&] { return redis.command({"KEYS", "redisync_alive:*"}).elements().size() == 1; }, 3s);
    co_await holder.release(asio::use_awaitable);
    // The release finds the head dead: all four of its client's waiters go in that one look.
    BOOST_TEST_REQUIRE(co_await pending[3]->wait(5s));
    BOOST_TEST(queued(redis, "together") == 0);
    co_await pending[3]->result()->release(asio::use_awaitable);
    co_await end_clean(waiters, c, redis);
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
    co_await end_clean(others, c, redis);
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
    // A fair waiter behind a plain holder is woken by the plain release's unlock message.
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

BOOST_FIXTURE_TEST_CASE(waiters_whose_client_key_and_places_were_lost_queue_again_and_keep_their_new_places, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto waiters = clients(ctx, redis, 2);
    auto holder = co_await c.new_owner().fair_lock("lost").acquire(asio::use_awaitable);
    auto const looks_before = redisync::test::command_calls(redis, "zscore");
    background_acquire a{ctx, (*waiters[0])->new_owner().fair_lock("lost")};
    co_await redisync::test::wait_until([&] { return queued(redis, "lost") == 1; }, 5s);
    background_acquire b{ctx, (*waiters[1])->new_owner().fair_lock("lost")};
    // Each waiter tries twice (once more when its subscription is confirmed) and then sleeps until
    // the holder's lease would end, 30 s from now.
    co_await redisync::test::wait_until([&] { return redisync::test::command_calls(redis, "zscore") - looks_before == 4; }, 5s);
    BOOST_TEST(queued(redis, "lost") == 2);
    // The queue and the clients' keys are gone (as after a restart without persistence): the
    // clients' next beats find their keys gone, and their waiters try again at once.
    redis.command({"DEL", "redisync_fair_queue:{lost}"});
    auto const alive_keys = redis.command({"KEYS", "redisync_alive:*"});
    for (auto const& key : alive_keys.elements()) redis.command({"DEL", std::string{key.text()}});
    co_await redisync::test::wait_until([&] { return queued(redis, "lost") == 2; }, 3s);
    // Past a few liveness periods both are still queued: their new places are kept.
    co_await redisync::test::sleep_for(3500ms);
    BOOST_TEST(queued(redis, "lost") == 2);
    co_await holder.release(asio::use_awaitable);
    for (int served = 0; served < 2; ++served) {
      co_await redisync::test::wait_until([&] { return a.result().has_value() || b.result().has_value(); }, 5s);
      auto& first = a.result().has_value() ? a : b;
      co_await first.result()->release(asio::use_awaitable);
      first.result().reset();
    }
    co_await end_clean(waiters, c, redis);
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
        // The other queued again, and its client's beats keep it queued for many liveness periods.
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
