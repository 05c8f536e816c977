// Spinning acquires against a real redis-server: a waiter that never listens on the lock's channel
// (no subscription at all) still excludes and gets the lock soon after another client's release,
// also as a user whose ACL denies every channel.

#include <redisync/redisync.hpp>

#include "support/lock_fixture.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

namespace asio = boost::asio;
using namespace redisync::test::lock_names;

namespace {

// A spinning acquire of `l` in the background; `done` once held, `at` when.
struct background_spin {
  explicit background_spin(asio::any_io_executor ex) : done{std::move(ex)} {}
  error_code error;
  std::optional<redisync::held> held;
  std::chrono::steady_clock::time_point at{};
  redisync::test::event done;
};

std::shared_ptr<background_spin> spin_in_background(asio::io_context& ctx, redisync::lock l) {
  auto state = std::make_shared<background_spin>(ctx.get_executor());
  auto run = [](std::shared_ptr<background_spin> s, redisync::lock l) -> asio::awaitable<void> {
    auto [ec, h] = co_await l.spinning().acquire(30s, asio::as_tuple(asio::use_awaitable));
    s->at = std::chrono::steady_clock::now();
    s->error = ec;
    if (!ec) s->held = std::move(h);
    s->done.notify();
  };
  asio::co_spawn(ctx, run(state, std::move(l)), asio::detached);
  return state;
}

// Another client holds `name` (a fair lock's, with `fair`), `spinner` waits for it spinning; once
// it waits the holder lets go, and the spinner must hold it well before a lock waiter's own look
// (1 s) would have found it.
asio::awaitable<void> spinner_takes_over(asio::io_context& ctx, redisync::client& spinner, redisync::config const& cfg,
                                         redis_server const& redis, std::string const& name, bool fair = false) {
  running_client holder_client{ctx, cfg};
  auto const lock_of = [&](redisync::owner const& o) -> redisync::lock { return fair ? o.fair_lock(name) : o.lock(name); };
  auto held_now = co_await lock_of(holder_client->new_owner()).acquire(30s, asio::use_awaitable);
  auto const waiter = spin_in_background(ctx, lock_of(spinner.new_owner()));
  auto const waits = [&] { return spinner.metrics().waiters == 1; };
  co_await redisync::test::wait_until(waits, 5s);
  BOOST_TEST(redisync::test::subscribers_of(redis, "redisson_lock__channel:{" + name + "}") == 0);
  co_await asio::steady_timer{ctx, 300ms}.async_wait(asio::use_awaitable);  // it spins meanwhile
  BOOST_TEST(!waiter->done.is_set());  // and still excludes
  auto const released = std::chrono::steady_clock::now();
  co_await held_now.release(asio::use_awaitable);
  BOOST_TEST_REQUIRE(co_await waiter->done.wait(5s));
  BOOST_TEST(!waiter->error);
  BOOST_TEST((waiter->at - released < 700ms));  // its looks are at most 128 ms apart
  co_await waiter->held->release(asio::use_awaitable);
  co_await holder_client.stop();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(spin_lock)

BOOST_FIXTURE_TEST_CASE(a_spinning_waiter_takes_the_lock_soon_after_another_clients_release_without_listening,
                        lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    co_await spinner_takes_over(ctx, c, fast_config(redis), redis, "spin:plain");
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis, {"spin:plain"});
  });
}

BOOST_FIXTURE_TEST_CASE(a_spinning_fair_waiter_is_served_without_listening, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    co_await spinner_takes_over(ctx, c, fast_config(redis), redis, "spin:fair", true);
    co_await c.flush_subscriptions(asio::use_awaitable);
    redisync::test::expect_nothing_left(redis, {"spin:fair"});
  });
}

BOOST_FIXTURE_TEST_CASE(spinning_locks_work_for_a_user_whose_acl_denies_every_channel, lock_env) {
  redis.command({"ACL", "SETUSER", "no-channels", "on", ">secret", "~*", "resetchannels", "+@all"});
  auto tune = [](redisync::config& cfg) {
    cfg.username = "no-channels";
    cfg.password = "secret";
  };
  auto cfg = fast_config(redis);
  tune(cfg);
  run(
      [&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
        redisync::resp::request publish;
        publish.push("PUBLISH", "redisson_lock__channel:{spin:acl}", "0");
        auto const denied = co_await c.exec(publish, asio::use_awaitable);
        BOOST_TEST_REQUIRE(denied.size() == 1u);
        BOOST_TEST(denied[0].is_error());  // NOPERM: the ACL denies the channel
        co_await spinner_takes_over(ctx, c, cfg, redis, "spin:acl");
        redisync::test::expect_nothing_left(redis, {"spin:acl"});
      },
      tune);
}

BOOST_AUTO_TEST_SUITE_END()
