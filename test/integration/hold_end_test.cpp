// Every hold ends exactly once, as released (the server confirmed it) or lost (reported), against a
// real redis-server that refuses renewals, releases and publishes.

#include <redisync/redisync.hpp>

#include "primitives/fair_lock/protocol.hpp"
#include "support/lock_fixture.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <csignal>
#include <thread>

namespace asio = boost::asio;
using namespace redisync::test::lock_names;

namespace {

// Waits (blocking: before any client runs) until `replica` is linked to its master, so that writes
// reach it within a moment.
void wait_for_link(redis_server const& replica) {
  auto const deadline = std::chrono::steady_clock::now() + 10s;
  while (replica.command({"INFO", "replication"}).text().find("master_link_status:up") ==
         std::string_view::npos) {
    BOOST_TEST_REQUIRE((std::chrono::steady_clock::now() < deadline), "the replica never linked");
    std::this_thread::sleep_for(10ms);
  }
}

// Promotes the replica and makes the master its replica, once the replica has `key`: a demotion
// without data loss, after which the old master refuses writes with READONLY.
// (Commands in plain functions: GCC 12 miscompiles an initializer_list in a coroutine's loop.)
bool has_key(redis_server const& redis, std::string const& key) {
  return redis.command({"EXISTS", key}).integer() == 1;
}

void swap_roles(redis_server const& master, redis_server const& replica) {
  replica.command({"REPLICAOF", "NO", "ONE"});
  master.command({"REPLICAOF", "127.0.0.1", std::to_string(replica.port())});
}

asio::awaitable<void> demote(redis_server const& master, redis_server const& replica,
                             std::string key) {
  auto const deadline = std::chrono::steady_clock::now() + 5s;
  while (!has_key(replica, key)) {
    BOOST_TEST_REQUIRE((std::chrono::steady_clock::now() < deadline), "the replica never got " << key);
    co_await redisync::test::sleep_for(2ms);
  }
  swap_roles(master, replica);
}

// Holds a lock with the watchdog, lets `refuse` make the server refuse its renewals, and checks
// that the hold turns uncertain, then lost no earlier than its deadline and not much later.
asio::awaitable<void> expect_refused_renewals_end_in_loss(
    asio::io_context& ctx, redisync::config cfg, std::function<asio::awaitable<void>()> refuse) {
  running_client c{ctx, cfg};
  auto h = co_await c->make_lock("refused").acquire(asio::use_awaitable);
  co_await refuse();
  bool saw_uncertain = false;
  while (h.status() != hold_status::lost) {
    if (h.status() == hold_status::uncertain) saw_uncertain = true;
    BOOST_TEST_REQUIRE((std::chrono::steady_clock::now() < h.valid_until() + 1s));
    co_await redisync::test::sleep_for(5ms);
  }
  BOOST_TEST(saw_uncertain);
  BOOST_TEST((std::chrono::steady_clock::now() >= h.valid_until()));
  auto [ec, how] = co_await h.wait_lost(tuple_awaitable);
  BOOST_TEST((!ec && how == hold_status::lost));
  auto [rec] = co_await h.release(tuple_awaitable);
  BOOST_TEST((rec == error::lease_lost));
  co_await c.stop();
}

redisync::config with_lease(redis_server const& redis, std::chrono::milliseconds lease) {
  auto cfg = redisync::test::fast_config(redis);
  cfg.watchdog_lease = lease;
  return cfg;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(every_hold_ends_once)

// The loss event and the loss metrics say why: the lock deleted (gone), or another owner holds it.
BOOST_AUTO_TEST_CASE(a_lost_hold_says_whether_its_lock_was_freed_or_taken_by_another_owner) {
  redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    auto cfg = with_lease(redis, 900ms);
    std::vector<std::pair<error_code, std::string>> lost;
    cfg.on_event = [&](redisync::event const& e) {
      if (e.kind == redisync::event_kind::hold_lost) lost.emplace_back(e.error, std::string{e.detail});
    };
    running_client c{ctx, cfg};
    auto freed = co_await c->make_lock("freed").acquire(asio::use_awaitable);
    auto taken = co_await c->make_lock("taken").acquire(asio::use_awaitable);
    redis.command({"DEL", "freed"});
    redis.command({"DEL", "taken"});
    redis.command({"HSET", "taken", "someone:else", "1"});
    redis.command({"PEXPIRE", "taken", "30000"});
    auto [fec, fend] = co_await freed.wait_lost(tuple_awaitable);
    auto [tec, tend] = co_await taken.wait_lost(tuple_awaitable);
    BOOST_TEST((fend == hold_status::lost && tend == hold_status::lost));
    BOOST_TEST_REQUIRE(lost.size() == 2u);
    for (auto const& [ec, detail] : lost) {
      BOOST_TEST((ec == error::lease_lost));
      BOOST_TEST(!detail.empty());
    }
    auto const m = c->metrics();
    auto const& lock = m.by_primitive[static_cast<std::size_t>(redisync::primitive::lock)];
    BOOST_TEST(lock.lost_by(redisync::loss_cause::gone) == 1u);
    BOOST_TEST(lock.lost_by(redisync::loss_cause::taken) == 1u);
    co_await c.stop();
  });
}

BOOST_AUTO_TEST_CASE(a_demoted_master_refusing_renewals_makes_the_hold_uncertain_then_lost) {
  redis_server master;
  redis_server replica{redisync::process::replica_of(master.port())};
  wait_for_link(replica);
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    co_await expect_refused_renewals_end_in_loss(ctx, with_lease(master, 900ms),
                                                 [&] { return demote(master, replica, "refused"); });
  });
}

BOOST_AUTO_TEST_CASE(an_acl_revoke_of_scripts_makes_the_hold_uncertain_then_lost) {
  redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    auto revoke = [&]() -> asio::awaitable<void> {
      redis.command({"ACL", "SETUSER", "default", "-eval", "-evalsha"});
      co_return;
    };
    co_await expect_refused_renewals_end_in_loss(ctx, with_lease(redis, 900ms), revoke);
    redis.command({"ACL", "SETUSER", "default", "+eval", "+evalsha"});
  });
}

BOOST_AUTO_TEST_CASE(a_stopped_server_makes_a_three_second_hold_uncertain_then_lost) {
  redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    auto stop = [&]() -> asio::awaitable<void> {
      redis.stop();
      co_return;
    };
    co_await expect_refused_renewals_end_in_loss(ctx, with_lease(redis, 3s), stop);
  });
}

BOOST_AUTO_TEST_CASE(many_holds_refused_together_all_end_lost_once) {
  redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, with_lease(redis, 600ms)};
    std::vector<held> holds;
    for (int i = 0; i < 50; ++i) {
      holds.push_back(co_await c->make_lock("many-" + std::to_string(i)).acquire(asio::use_awaitable));
    }
    redis.command({"ACL", "SETUSER", "default", "-eval", "-evalsha"});
    for (auto& h : holds) {
      auto [ec, how] = co_await h.wait_lost(tuple_awaitable);
      BOOST_TEST((!ec && how == hold_status::lost));
    }
    BOOST_TEST(c->metrics().holds == 0u);
    redis.command({"ACL", "SETUSER", "default", "+eval", "+evalsha"});
    co_await c.stop();
  });
}

BOOST_AUTO_TEST_CASE(a_release_that_fails_stops_renewal_and_the_lock_does_not_outlive_its_lease) {
  redis_server master;
  redis_server replica{redisync::process::replica_of(master.port())};
  wait_for_link(replica);
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, with_lease(master, 1500ms)};
    auto h = co_await c->make_lock("zombie").acquire(asio::use_awaitable);
    co_await demote(master, replica, "zombie");  // the release script's DEL is refused
    auto [ec] = co_await h.release(tuple_awaitable);
    BOOST_TEST((ec == error::read_only), ec.message());
    BOOST_TEST((h.status() != hold_status::released));  // the server did not confirm it
    BOOST_TEST(!h.is_held());
    auto [again] = co_await h.release(tuple_awaitable);
    BOOST_TEST((again == error::not_held));
    // Nobody renews it any more: the lock is gone on the (new) master within its lease.
    auto const released_at = std::chrono::steady_clock::now();
    while (has_key(replica, "zombie")) {
      BOOST_TEST_REQUIRE((std::chrono::steady_clock::now() - released_at < 1500ms + 500ms));
      co_await redisync::test::sleep_for(20ms);
    }
    auto [lost, how] = co_await h.wait_lost(tuple_awaitable);
    BOOST_TEST((!lost && how == hold_status::lost));
    BOOST_TEST((h.status() == hold_status::lost));
    master.command({"REPLICAOF", "NO", "ONE"});
    co_await c.stop();
  });
}

BOOST_AUTO_TEST_CASE(a_refused_release_is_retried_in_the_background_until_it_goes_through) {
  redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    auto cfg = with_lease(redis, 3s);
    std::vector<redisync::event_kind> seen;
    cfg.on_event = [&](redisync::event const& e) { seen.push_back(e.kind); };
    running_client c{ctx, cfg};
    auto h = co_await c->make_lock("retried").acquire(asio::use_awaitable);
    redis.command({"ACL", "SETUSER", "default", "-eval", "-evalsha"});
    auto [ec] = co_await h.release(tuple_awaitable);
    BOOST_TEST((ec == error::no_permission), ec.message());
    BOOST_TEST((h.status() == hold_status::uncertain));
    BOOST_TEST(redis.command({"EXISTS", "retried"}).integer() == 1);
    redis.command({"ACL", "SETUSER", "default", "+eval", "+evalsha"});
    // The client's own retry releases it, long before the 3 s lease would have.
    auto [end, how] = co_await h.wait_lost(tuple_awaitable);
    BOOST_TEST((!end && how == hold_status::released));  // ended, and not by a loss
    BOOST_TEST((h.status() == hold_status::released));
    BOOST_TEST(redis.command({"EXISTS", "retried"}).integer() == 0);
    BOOST_TEST((std::count(seen.begin(), seen.end(), redisync::event_kind::release_failed) == 1));
    BOOST_TEST((std::count(seen.begin(), seen.end(), redisync::event_kind::release_retried) == 1));
    co_await c.stop();
  });
}

BOOST_AUTO_TEST_CASE(a_hand_off_refused_for_lack_of_memory_falls_back_to_a_plain_release) {
  redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, with_lease(redis, 3s)};
    auto a = co_await c->make_lock("oom").acquire(asio::use_awaitable);
    redisync::test::background_acquire b{ctx, c->make_lock("oom")};
    while (c->metrics().waiters == 0) co_await asio::post(ctx, asio::use_awaitable);
    // Out of memory: the hand-off's new fencing token cannot be written; deleting the lock can.
    redis.command({"CONFIG", "SET", "maxmemory", "1"});
    auto [ec] = co_await a.release(tuple_awaitable);
    BOOST_TEST(!ec, ec.message());
    BOOST_TEST((a.status() == hold_status::released));
    BOOST_TEST(c->metrics().handoffs == 0u);
    redis.command({"CONFIG", "SET", "maxmemory", "0"});
    BOOST_TEST_REQUIRE(co_await b.wait(5s));
    if (b.error() == error::out_of_memory) {
      // B tried while the limit was still set: a typed error, and the lock is free for it now.
      b.result() = co_await c->make_lock("oom").acquire(asio::use_awaitable);
    } else {
      BOOST_TEST_REQUIRE(!b.error(), b.error().message());
    }
    BOOST_TEST(b.result()->is_held());
    co_await b.result()->release(asio::use_awaitable);
    co_await c->flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis);
    co_await c.stop();
  });
}

BOOST_AUTO_TEST_CASE(a_release_whose_publish_is_refused_succeeds_and_reports_the_waiters_untold) {
  redis_server redis;
  // Redis 7's default for new users: no channel may be published to.
  redis.command({"ACL", "SETUSER", "app", "on", ">secret", "~*", "resetchannels", "+@all"});
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    auto cfg = redisync::test::fast_config(redis);
    cfg.username = "app";
    cfg.password = "secret";
    std::vector<redisync::event_kind> seen;
    cfg.on_event = [&](redisync::event const& e) { seen.push_back(e.kind); };
    running_client c{ctx, cfg};
    auto h = co_await c->make_lock("untold").acquire(asio::use_awaitable);
    auto [ec] = co_await h.release(tuple_awaitable);
    BOOST_TEST(!ec, ec.message());
    BOOST_TEST((h.status() == hold_status::released));
    BOOST_TEST(redis.command({"EXISTS", "untold"}).integer() == 0);
    BOOST_TEST((std::count(seen.begin(), seen.end(), redisync::event_kind::waiters_not_notified) == 1));
    // The same for a forced release.
    auto h2 = co_await c->make_lock("untold").acquire(asio::use_awaitable);
    BOOST_TEST(co_await c->make_lock("untold").force_release(asio::use_awaitable));
    BOOST_TEST((std::count(seen.begin(), seen.end(), redisync::event_kind::waiters_not_notified) == 2));
    co_await c.stop();
  });
}

BOOST_AUTO_TEST_CASE(queries_on_a_key_of_the_wrong_type_answer_wrong_type) {
  redis_server redis;
  redis.command({"SET", "a-string", "precious"});
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, redisync::test::fast_config(redis)};
    auto lock = c->make_lock("a-string");
    auto [lec, locked] = co_await lock.is_locked(tuple_awaitable);
    BOOST_TEST((lec == error::wrong_type));
    auto [rec, left] = co_await lock.remaining_lease(tuple_awaitable);
    BOOST_TEST((rec == error::wrong_type));
    BOOST_TEST(!left.has_value());
    auto [hec, count] = co_await lock.hold_count(tuple_awaitable);
    BOOST_TEST((hec == error::wrong_type));
    BOOST_TEST(redis.command({"GET", "a-string"}).text() == "precious");
    co_await c.stop();
  });
}

BOOST_FIXTURE_TEST_CASE(releasing_through_the_handle_releases_the_innermost_guards_level, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto me = c.new_owner();
    auto lock = me.lock("levels");
    auto outer = co_await lock.acquire(asio::use_awaitable);
    {
      auto inner = co_await lock.acquire(asio::use_awaitable);
      co_await lock.release(asio::use_awaitable);  // Redisson's unlock(): the innermost level
      BOOST_TEST(!inner.is_held());
      BOOST_TEST((inner.status() == hold_status::released));
      auto [ec] = co_await inner.release(tuple_awaitable);
      BOOST_TEST((ec == error::not_held));
    }  // destroying `inner` releases nothing more
    co_await asio::post(ctx, asio::use_awaitable);
    BOOST_TEST(co_await lock.hold_count(asio::use_awaitable) == 1);
    BOOST_TEST((outer.status() == hold_status::held));
    BOOST_TEST(outer.is_held());
    auto none = co_await c.make_lock("levels").try_acquire(0ms, asio::use_awaitable);
    BOOST_TEST(!none.has_value());
    // Releasing the outer guard while a nested one lives: the handle has no level left to give.
    auto nested = co_await lock.acquire(asio::use_awaitable);
    co_await outer.release(asio::use_awaitable);
    BOOST_TEST(nested.is_held());
    BOOST_TEST(co_await lock.hold_count(asio::use_awaitable) == 1);
    co_await lock.release(asio::use_awaitable);
    BOOST_TEST(!nested.is_held());
    auto [ec] = co_await lock.release(tuple_awaitable);
    BOOST_TEST((ec == error::not_owner));
    redisync::test::expect_nothing_left(redis);
  });
}

BOOST_AUTO_TEST_CASE(a_hold_never_says_held_past_its_deadline_after_the_client_stopped) {
  redis_server redis;
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, redisync::test::fast_config(redis)};
    auto fixed = co_await c->make_lock("stopped-fixed").acquire(800ms, asio::use_awaitable);
    auto renewed = co_await c->make_lock("stopped-renewed").acquire(asio::use_awaitable);
    co_await c.stop();
    // The client can neither renew nor release any more: both holds are lost, and say so.
    BOOST_TEST((fixed.status() == hold_status::lost));
    BOOST_TEST((renewed.status() == hold_status::lost));
    BOOST_TEST(!fixed.is_held());
    auto [ec, how] = co_await fixed.wait_lost(tuple_awaitable);
    BOOST_TEST((!ec && how == hold_status::lost));
  });
}

BOOST_AUTO_TEST_CASE(status_says_lost_past_the_deadline_even_when_the_client_does_not_run) {
  redis_server redis;
  asio::io_context ctx;
  redisync::client c{ctx.get_executor(), redisync::test::fast_config(redis)};
  c.start();
  std::optional<held> h;
  c.make_lock("frozen").acquire(300ms, [&](error_code, held got) { h = std::move(got); });
  while (!h) ctx.run_one();
  BOOST_TEST((h->status() == hold_status::held));
  std::this_thread::sleep_for(400ms);  // the client's io_context does not run meanwhile
  BOOST_TEST((h->status() == hold_status::lost));
  BOOST_TEST(!h->is_held());
  c.stop();
  ctx.run();
}

BOOST_FIXTURE_TEST_CASE(fencing_tokens_past_two_to_the_53_stay_exact_and_increase, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    redis.command({"SET", "redisson_lock_token:{big}", "9007199254740992"});  // 2^53
    std::uint64_t expected = 9007199254740993u;
    for (int i = 0; i < 3; ++i) {
      auto h = co_await c.make_lock("big").acquire(asio::use_awaitable);
      BOOST_TEST(h.token() == expected);
      ++expected;
      co_await h.release(asio::use_awaitable);
    }
    // The bound: 2^63 - 1, the largest token a signed 64-bit counter (Redisson's) can hold.
    redis.command({"SET", "redisson_lock_token:{big}", "9223372036854775806"});
    auto last = co_await c.make_lock("big").acquire(asio::use_awaitable);
    BOOST_TEST(last.token() == 9223372036854775807u);
    co_await last.release(asio::use_awaitable);
    auto [ec, none] = co_await c.make_lock("big").try_acquire(0ms, tuple_awaitable);
    BOOST_TEST((ec == error::token_exhausted), ec.message());
    BOOST_TEST(redis.command({"EXISTS", "big"}).integer() == 0);
    BOOST_TEST(redis.command({"GET", "redisson_lock_token:{big}"}).text() == "9223372036854775807");
  });
}

BOOST_FIXTURE_TEST_CASE(a_token_key_beyond_the_bound_refuses_the_acquire_and_leaves_no_hold, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    redis.command({"SET", "redisson_lock_token:{tampered}", "99999999999999999999"});
    auto [ec, h] = co_await c.make_lock("tampered").try_acquire(0ms, tuple_awaitable);
    BOOST_TEST((ec == error::token_exhausted), ec.message());
    BOOST_TEST(redis.command({"EXISTS", "tampered"}).integer() == 0);
    BOOST_TEST(redis.command({"GET", "redisson_lock_token:{tampered}"}).text() == "99999999999999999999");
    // A counter that is no number at all is replaced: tokens start again from the server time.
    redis.command({"SET", "redisson_lock_token:{tampered}", "not a number"});
    auto fresh = co_await c.make_lock("tampered").acquire(asio::use_awaitable);
    BOOST_TEST(fresh.token() > 1'000'000'000'000'000u);
    co_await fresh.release(asio::use_awaitable);
  });
}

BOOST_FIXTURE_TEST_CASE(an_acquire_reply_that_cannot_be_read_is_undone, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto me = c.new_owner();
    auto outer = co_await me.lock("unreadable").acquire(asio::use_awaitable);
    // A nested acquire answers with the counter's value as the token: garbage now.
    redis.command({"SET", "redisson_lock_token:{unreadable}", "garbage"});
    auto [ec, inner] = co_await me.lock("unreadable").acquire(tuple_awaitable);
    BOOST_TEST((ec == error::unexpected_reply), ec.message());
    // The level that acquire may have added is taken back.
    BOOST_TEST(redisync::test::hget_count(redis, "unreadable", me.id()) == 1);
    BOOST_TEST(co_await me.lock("unreadable").hold_count(asio::use_awaitable) == 1);
    co_await outer.release(asio::use_awaitable);
    BOOST_TEST(redis.command({"EXISTS", "unreadable"}).integer() == 0);
  });
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

struct debug_env : lock_env {
  debug_env() : lock_env{redisync::process::with_args({"--enable-debug-command", "yes"})} {}
};

}  // namespace

BOOST_AUTO_TEST_SUITE(stalls_in_flight)


// A stall longer than the lease while an acquire was in flight made it return a hold already past
// its deadline (status lost) whose grant stayed in Redis; the owner's next acquires nested inside
// it, later with token 0. The grant is confirmed (its lease renewed) before the caller sees it.
BOOST_FIXTURE_TEST_CASE(an_acquire_answered_after_a_stall_longer_than_its_lease_returns_a_valid_hold, debug_env) {
  for (auto stall : {std::vector<std::string>{"DEBUG", "SLEEP", "1.5"},
                     std::vector<std::string>{"CLIENT", "PAUSE", "1500", "WRITE"}}) {
    for (auto kind : {redisync::lock_kind::reentrant, redisync::lock_kind::fair, redisync::lock_kind::read,
                      redisync::lock_kind::write}) {
      BOOST_TEST_CONTEXT(stall[0] << ", kind " << static_cast<int>(kind)) {
        run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
          auto me = c.new_owner();
          auto lock = redisync::test::lock_of_kind(me, kind, "stalled");
          redisync::resp::request pause;
          pause.push_range(stall[0], std::vector<std::string>{stall.begin() + 1, stall.end()});
          c.exec(std::move(pause), [](error_code, redisync::response) {});  // goes out first
          auto h = co_await lock.acquire(asio::use_awaitable);
          BOOST_TEST((h.status() == hold_status::held));
          BOOST_TEST((h.valid_until() > std::chrono::steady_clock::now()));
          if (kind != redisync::lock_kind::read) BOOST_TEST(h.token() > 0u);
          // The same owner nests inside it, and one release per level frees it.
          auto inner = co_await lock.acquire(asio::use_awaitable);
          BOOST_TEST(inner.token() == h.token());
          co_await inner.release(asio::use_awaitable);
          auto [ec] = co_await h.release(tuple_awaitable);
          BOOST_TEST(!ec, ec.message());
          BOOST_TEST(redis.command({"EXISTS", "stalled"}).integer() == 0);
        }, [](redisync::config& cfg) { cfg.watchdog_lease = 600ms; });
        redis.command({"FLUSHALL"});
      }
    }
  }
}

// A release of a fair lock answered after a stall longer than the waiters' lease (but shorter than
// their liveness): the queue goes on in its order, and each waiter gets a valid hold with a token.
BOOST_FIXTURE_TEST_CASE(a_fair_queue_keeps_its_order_across_a_stall_longer_than_the_waiters_lease, debug_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto const queue = redisync::detail::fair_protocol::queue_key_of("queue");
    // The holder's lease outlasts the stall; the waiters' (the watchdog's, 600 ms) does not.
    auto holder = co_await c.new_owner().fair_lock("queue").acquire(5s, asio::use_awaitable);
    std::vector<std::string> order;
    auto waiter = [&](std::string tag) -> asio::awaitable<void> {
      auto h = co_await c.new_owner().fair_lock("queue").acquire(asio::use_awaitable);
      BOOST_TEST((h.status() == hold_status::held), tag);
      BOOST_TEST(h.token() > 0u, tag);
      order.push_back(tag);
      co_await h.release(asio::use_awaitable);
    };
    asio::co_spawn(ctx, waiter("first"), asio::detached);
    co_await redisync::test::wait_until([&] { return redis.command({"ZCARD", queue}).integer() == 1; }, 5s);
    asio::co_spawn(ctx, waiter("second"), asio::detached);
    co_await redisync::test::wait_until([&] { return redis.command({"ZCARD", queue}).integer() == 2; }, 5s);
    redisync::resp::request stall;
    stall.push("DEBUG", "SLEEP", "1.5");
    c.exec(std::move(stall), [](error_code, redisync::response) {});  // goes out before the release
    co_await holder.release(asio::use_awaitable);
    co_await redisync::test::wait_until([&] { return order.size() == 2; }, 10s);
    BOOST_TEST(order == (std::vector<std::string>{"first", "second"}), boost::test_tools::per_element());
    co_await redisync::test::wait_until([&] { return redisync::test::lock_keys(redis).empty(); }, 5s);
  }, [](redisync::config& cfg) {
    cfg.watchdog_lease = 600ms;
    // The stall is shorter than the waiters' liveness: a longer one would find their client dead.
    cfg.fair_waiter_liveness = 3s;
  });
}

// A bounded wait that ends while the stalled grant is on its way gives the grant back.
BOOST_FIXTURE_TEST_CASE(a_bounded_acquire_whose_grant_comes_after_its_wait_leaves_nothing_held, debug_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto lock = c.make_lock("stalled");
    redisync::resp::request pause;
    pause.push("DEBUG", "SLEEP", "1.5");
    c.exec(std::move(pause), [](error_code, redisync::response) {});
    auto [ec, h] = co_await lock.try_acquire(500ms, tuple_awaitable);
    BOOST_TEST(!ec, ec.message());
    BOOST_TEST(!h.has_value());
    co_await redisync::test::wait_until([&] { return redis.command({"EXISTS", "stalled"}).integer() == 0; }, 5s);
    auto again = co_await lock.acquire(asio::use_awaitable);  // counts from nothing left over
    BOOST_TEST(redisync::test::hget_count(redis, "stalled", lock.owner_id()) == 1);
    co_await again.release(asio::use_awaitable);
  }, [](redisync::config& cfg) { cfg.watchdog_lease = 600ms; });
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(fencing_tokens)

// A level of the owner's left in Redis (its hold given up here while the key lived on) outlived
// the token counter, which expires after a hold's first lease: the next acquire nested into it
// and reported token 0. A hold whose counter is gone is given a fresh token.
BOOST_FIXTURE_TEST_CASE(a_hold_nested_into_a_level_that_outlived_its_token_counter_has_a_fresh_token, lock_env) {
  for (auto kind : {redisync::lock_kind::reentrant, redisync::lock_kind::fair, redisync::lock_kind::write}) {
    BOOST_TEST_CONTEXT("kind " << static_cast<int>(kind)) {
      run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
        auto me = c.new_owner();
        auto lock = redisync::test::lock_of_kind(me, kind, "outlived");
        if (kind == redisync::lock_kind::write) {
          redis.command({"HSET", "outlived", "mode", "write", lock.owner_id() + ":write", "1"});
        } else {
          redis.command({"HSET", "outlived", lock.owner_id(), "1"});
        }
        redis.command({"PEXPIRE", "outlived", "30000"});
        auto h = co_await lock.acquire(asio::use_awaitable);
        BOOST_TEST(h.token() > 1'000'000'000'000'000u);  // server time in µs, as a fresh token
        co_await h.release(asio::use_awaitable);
      });
      redis.command({"FLUSHALL"});
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(hold_depth)

// Re-entry had no limit; a read hold's renewal set one key per level, so a count tampered to
// 2^31 - 2 froze Redis (BUSY, SCRIPT KILL refused).
BOOST_FIXTURE_TEST_CASE(an_owner_nests_max_hold_depth_levels_and_one_more_fails_with_too_deep_changing_nothing,
                        lock_env) {
  for (auto kind : {redisync::lock_kind::reentrant, redisync::lock_kind::fair, redisync::lock_kind::read,
                    redisync::lock_kind::write}) {
    BOOST_TEST_CONTEXT("kind " << static_cast<int>(kind)) {
      run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
        auto lock = redisync::test::lock_of_kind(c.new_owner(), kind, "deep");
        auto const field = kind == redisync::lock_kind::write ? lock.owner_id() + ":write" : lock.owner_id();
        std::vector<redisync::held> levels;
        for (std::int64_t i = 0; i < redisync::max_hold_depth; ++i) {
          levels.push_back(co_await lock.acquire(asio::use_awaitable));
        }
        auto [ec, none] = co_await lock.try_acquire(0ms, tuple_awaitable);
        BOOST_TEST((ec == error::too_deep), ec.message());
        BOOST_TEST(!none.has_value());
        BOOST_TEST(redisync::test::hget_count(redis, "deep", field) == redisync::max_hold_depth);
        while (!levels.empty()) {
          co_await levels.back().release(asio::use_awaitable);
          levels.pop_back();
        }
        BOOST_TEST(redis.command({"EXISTS", "deep"}).integer() == 0);
      });
      redis.command({"FLUSHALL"});
    }
  }
}

BOOST_FIXTURE_TEST_CASE(a_read_count_tampered_past_the_limit_is_not_renewed_level_by_level_and_the_hold_ends,
                        lock_env) {
  std::vector<error_code> refused;
  run(
      [&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
        auto lock = c.new_owner().read_write_lock("tampered").read();
        auto h = co_await lock.acquire(asio::use_awaitable);
        redis.command({"HSET", "tampered", lock.owner_id(), "2147483646"});
        auto [ec, status] = co_await h.wait_lost(tuple_awaitable);
        BOOST_TEST(!ec, ec.message());
        BOOST_TEST((status == hold_status::lost));
        BOOST_TEST(redis.command({"PING"}).text() == "PONG");  // Redis was never busy
        // The owner holds nothing of it now: its next read takes the level found there over as a
        // fresh hold of one level (as one a lost release left), deleting at most the limit's keys.
        auto [again, next] = co_await lock.try_acquire(0ms, tuple_awaitable);
        BOOST_TEST_REQUIRE(!again, again.message());
        BOOST_TEST(redis.command({"HGET", "tampered", lock.owner_id()}).text() == "1");
        co_await next->release(asio::use_awaitable);
        BOOST_TEST(redis.command({"EXISTS", "tampered"}).integer() == 0);
      },
      [&](redisync::config& cfg) {
        cfg.watchdog_lease = 600ms;
        cfg.on_event = [&](redisync::event const& e) {
          if (e.kind == redisync::event_kind::renewal_failed) refused.push_back(e.error);
        };
      });
  BOOST_TEST_REQUIRE(refused.size() == 1u);
  BOOST_TEST((refused[0] == error::too_deep), refused[0].message());
}

// Counts at or past 2^31 broke re-entry (unexpected_reply), and undoing the failed re-entries
// took levels off the outer hold.
BOOST_FIXTURE_TEST_CASE(a_reentrant_count_tampered_past_2_to_the_31_refuses_re_entry_and_keeps_the_count, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto lock = c.make_lock("tampered");
    auto h = co_await lock.acquire(asio::use_awaitable);
    redis.command({"HSET", "tampered", lock.owner_id(), "2147483650"});
    for (int i = 0; i < 3; ++i) {
      auto [ec, none] = co_await lock.try_acquire(0ms, tuple_awaitable);
      BOOST_TEST((ec == error::too_deep), ec.message());
    }
    BOOST_TEST(redis.command({"HGET", "tampered", lock.owner_id()}).text() == "2147483650");
    co_await h.release(asio::use_awaitable);
    BOOST_TEST(redis.command({"HGET", "tampered", lock.owner_id()}).text() == "2147483649");
  });
}

BOOST_AUTO_TEST_SUITE_END()
