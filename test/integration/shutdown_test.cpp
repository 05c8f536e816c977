// Ending a client at any moment: shutdown() and stop() with waiters, holders and pending releases
// of every primitive, twice, and with handles and held objects that outlive the client.

#include <redisync/redisync.hpp>

#include "support/lock_fixture.hpp"

#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

namespace asio = boost::asio;
using namespace redisync::test::lock_names;

namespace {

// The handle of `kind` on `name` for a fresh owner of `c`.
redisync::lock handle(redisync::client& c, redisync::lock_kind kind, std::string const& name) {
  return redisync::test::lock_of_kind(c.new_owner(), kind, name);
}

// Completions of the background acquires, counted per acquire: each must come exactly once.
struct completions {
  std::vector<int> count;
  std::vector<error_code> error;
  explicit completions(std::size_t n) : count(n, 0), error(n) {}
  bool all_once() const {
    return std::all_of(count.begin(), count.end(), [](int n) { return n == 1; });
  }
};

constexpr std::size_t waiters = 5;
constexpr redisync::lock_kind waiting_kinds[] = {redisync::lock_kind::reentrant, redisync::lock_kind::fair,
                                                 redisync::lock_kind::write};

// A client that holds "busy" and has `waiters` acquires waiting for it, counted in `done`.
asio::awaitable<held> hold_with_waiters(redisync::client& c, redisync::lock_kind kind, completions& done) {
  auto holder = co_await handle(c, kind, "busy").acquire(asio::use_awaitable);
  for (std::size_t i = 0; i < waiters; ++i) {
    handle(c, kind, "busy").acquire([&done, i](error_code ec, held) {
      ++done.count[i];
      done.error[i] = ec;
    });
  }
  co_await redisync::test::wait_until([&] { return c.metrics().waiters == waiters; }, 5s);
  co_return holder;
}

// Runs `body` once per kind, each with a started client of `redis` on a fresh io_context.
void for_each_waiting_kind(redis_server& redis,
                           std::function<asio::awaitable<void>(redisync::client&, redisync::lock_kind)> body) {
  for (auto kind : waiting_kinds) {
    BOOST_TEST_CONTEXT("kind " << static_cast<int>(kind)) {
      run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
        redisync::client c{ctx.get_executor(), redisync::test::fast_config(redis)};
        c.start();
        co_await body(c, kind);
      });
      redis.command({"FLUSHALL"});
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(ending_a_client)

// 14 of 30 SIGTERMs of a user's service crashed here (SIGSEGV in wake_every_waiter).
BOOST_FIXTURE_TEST_CASE(shutdown_with_several_waiters_on_one_lock_fails_each_once, lock_env) {
  for_each_waiting_kind(redis, [&](redisync::client& c, redisync::lock_kind kind) -> asio::awaitable<void> {
    completions done{waiters};
    auto holder = co_await hold_with_waiters(c, kind, done);
    auto [ec] = co_await c.shutdown(5s, tuple_awaitable);
    BOOST_TEST(!ec, ec.message());
    co_await redisync::test::wait_until([&] { return done.all_once(); }, 5s);
    for (auto const& e : done.error) BOOST_TEST((e == error::shutting_down), e.message());
    BOOST_TEST((holder.status() == hold_status::released));
    for (auto const& k : redisync::test::lock_keys(redis)) BOOST_TEST(false, "left: " << k);
  });
}

BOOST_FIXTURE_TEST_CASE(stop_twice_with_several_waiters_on_one_lock_fails_each_once, lock_env) {
  for_each_waiting_kind(redis, [&](redisync::client& c, redisync::lock_kind kind) -> asio::awaitable<void> {
    completions done{waiters};
    auto holder = co_await hold_with_waiters(c, kind, done);
    c.stop();
    c.stop();
    co_await redisync::test::wait_until([&] { return done.all_once(); }, 5s);
    for (auto const& e : done.error) BOOST_TEST((e == error::not_connected), e.message());
    BOOST_TEST((holder.status() == hold_status::lost));
  });
}

// status() right after stop() said held, and a release right after it completed ok, while the
// stop ends every hold as lost.
BOOST_FIXTURE_TEST_CASE(right_after_stop_a_hold_says_lost_and_its_release_fails_with_lease_lost, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto h = co_await c.make_lock("stopped").acquire(asio::use_awaitable);
    auto later = co_await c.make_lock("stopped:later").acquire(asio::use_awaitable);
    c.stop();
    BOOST_TEST((h.status() == hold_status::lost));
    BOOST_TEST(!h.is_held());
    auto [ec] = co_await h.release(tuple_awaitable);
    BOOST_TEST((ec == error::lease_lost), ec.message());
    auto [later_ec] = co_await later.release(tuple_awaitable);  // after the stop ran
    BOOST_TEST((later_ec == error::lease_lost), later_ec.message());
  });
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(empty_handles)

// release() and wait_lost() on a default or moved-from held threw from the call itself; under
// co_await the exception escaped ctx.run().
BOOST_FIXTURE_TEST_CASE(operations_on_an_empty_or_moved_from_handle_or_guard_complete_with_a_typed_error, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    held empty;
    auto [rec] = co_await empty.release(tuple_awaitable);
    BOOST_TEST((rec == error::not_held), rec.message());
    auto [wec, how] = co_await empty.wait_lost(tuple_awaitable);
    BOOST_TEST((wec == error::not_held), wec.message());
    auto h = co_await c.make_lock("moved").acquire(asio::use_awaitable);
    held taken = std::move(h);
    auto [mec] = co_await h.release(tuple_awaitable);  // NOLINT(bugprone-use-after-move): the case under test
    BOOST_TEST((mec == error::not_held), mec.message());
    bool called = false;
    BOOST_CHECK_NO_THROW(h.release([&](error_code) { called = true; }));
    co_await redisync::test::wait_until([&] { return called; }, 5s);
    co_await taken.release(asio::use_awaitable);

    auto lock = c.make_lock("moved");
    auto other = std::move(lock);
    auto [aec, none] = co_await lock.acquire(tuple_awaitable);  // NOLINT(bugprone-use-after-move)
    BOOST_TEST((aec == error::empty_handle), aec.message());
    auto [tec, maybe] = co_await lock.try_acquire(0ms, tuple_awaitable);
    BOOST_TEST((tec == error::empty_handle), tec.message());
    auto [lec, locked] = co_await lock.is_locked(tuple_awaitable);
    BOOST_TEST((lec == error::empty_handle), lec.message());
    auto [xec] = co_await lock.release(tuple_awaitable);
    BOOST_TEST((xec == error::empty_handle), xec.message());
    auto [bec] = co_await redisync::with_lock(lock, [](held&) -> asio::awaitable<void> { co_return; },
                                              asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(static_cast<bool>(bec));
    auto me = c.new_owner();
    auto me_too = std::move(me);
    BOOST_TEST(!me.holds("moved"));  // NOLINT(bugprone-use-after-move)
    auto [oec, none2] = co_await me.lock("moved").acquire(tuple_awaitable);
    BOOST_TEST((oec == error::empty_handle), oec.message());
    // A loss slot of no hold cancels what is bound to it: there is no lock to work under.
    asio::steady_timer t{co_await asio::this_coro::executor, 30s};
    auto [cec] = co_await t.async_wait(asio::bind_cancellation_slot(empty.loss_slot(co_await asio::this_coro::executor),
                                                                    tuple_awaitable));
    BOOST_TEST((cec == asio::error::operation_aborted));
  });
}

BOOST_AUTO_TEST_SUITE_END()
