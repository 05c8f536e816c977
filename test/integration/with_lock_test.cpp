// with_lock against a real redis-server: handles by value and const reference, a fixed lease, a
// bounded wait, any completion token, and the caller's cancellation reaching the body.

#include <redisync/redisync.hpp>

#include "support/lock_fixture.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

namespace asio = boost::asio;
using namespace redisync::test::lock_names;
using namespace asio::experimental::awaitable_operators;

namespace {

// A body that waits until it is cancelled, accepting every kind of cancellation, and says which.
struct waits_for_cancellation {
  bool started = false;
  std::optional<asio::cancellation_type> seen;
  asio::awaitable<void> operator()(held&) {
    started = true;
    co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
    co_await asio::this_coro::throw_if_cancelled(false);
    asio::steady_timer forever{co_await asio::this_coro::executor, 60s};
    co_await forever.async_wait(tuple_awaitable);
    seen = (co_await asio::this_coro::cancellation_state).cancelled();
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(with_lock_forms)

BOOST_FIXTURE_TEST_CASE(a_handle_made_inline_or_held_const_runs_the_body_and_releases, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto me = c.new_owner();
    int const inline_answer = co_await redisync::with_lock(me.lock("inline"), [&](held& h) -> asio::awaitable<int> {
      BOOST_TEST(h.is_held());
      BOOST_TEST(redisync::test::hget_count(redis, "inline", me.id()) == 1);
      co_return 7;
    });
    BOOST_TEST(inline_answer == 7);
    redisync::lock const fixed = me.lock("const");
    co_await redisync::with_lock(fixed, [](held&) -> asio::awaitable<void> { co_return; }, asio::use_awaitable);
    BOOST_TEST(redisync::test::lock_keys(redis).empty());
  });
}

BOOST_FIXTURE_TEST_CASE(a_body_may_take_the_hold_by_const_reference_or_nothing, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto me = c.new_owner();
    auto const token = co_await redisync::with_lock(me.lock("c"), [](held const& h) -> asio::awaitable<std::uint64_t> {
      co_return h.token();
    });
    BOOST_TEST(token > 0u);
    bool ran = false;
    co_await redisync::with_lock(me.lock("n"), [&]() -> asio::awaitable<void> {
      ran = me.holds("n");
      co_return;
    });
    BOOST_TEST(ran);
    int const n = co_await redisync::with_lock(me.lock("n"), {.wait = 2s}, []() -> asio::awaitable<int> { co_return 3; });
    BOOST_TEST(n == 3);
    BOOST_TEST(redisync::test::lock_keys(redis).empty());
  });
}

BOOST_FIXTURE_TEST_CASE(a_fixed_lease_is_not_renewed_and_a_bounded_wait_times_out, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto lock = c.make_lock("leased");
    co_await redisync::with_lock(lock, {.lease = 5000ms, .wait = {}}, [&](held&) -> asio::awaitable<void> {
      auto const pttl = redis.command({"PTTL", "leased"}).integer();
      BOOST_TEST((pttl > 4000 && pttl <= 5000), "PTTL " << pttl);
      co_return;
    });
    // Someone else holds it: a wait of 100 ms ends with error::timeout and the body never runs.
    auto other = co_await c.make_lock("leased").acquire(asio::use_awaitable);
    bool ran = false;
    auto const start = std::chrono::steady_clock::now();
    auto [e] = co_await redisync::with_lock(lock, {.lease = {}, .wait = 100ms}, [&](held&) -> asio::awaitable<void> {
      ran = true;
      co_return;
    }, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(!ran);
    BOOST_TEST_REQUIRE(static_cast<bool>(e));
    try {
      std::rethrow_exception(e);
    } catch (boost::system::system_error const& err) {
      BOOST_TEST((err.code() == error::timeout), err.what());
    }
    BOOST_TEST((std::chrono::steady_clock::now() - start < 5s));
    co_await other.release(asio::use_awaitable);
    BOOST_TEST(redisync::test::lock_keys(redis).empty());
  });
}

BOOST_FIXTURE_TEST_CASE(a_timer_that_wins_a_race_cancels_the_body_and_the_lock_is_released, lock_env) {
  run([&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
    auto lock = c.make_lock("race");
    waits_for_cancellation body;
    asio::steady_timer timer{co_await asio::this_coro::executor, 200ms};
    auto const start = std::chrono::steady_clock::now();
    auto winner = co_await (redisync::with_lock(lock, std::ref(body), asio::use_awaitable) ||
                            timer.async_wait(asio::use_awaitable));
    BOOST_TEST(winner.index() == 1u);
    BOOST_TEST((std::chrono::steady_clock::now() - start < 10s));
    BOOST_TEST_REQUIRE(body.seen.has_value());
    BOOST_TEST(((*body.seen & asio::cancellation_type::terminal) != asio::cancellation_type::none));
    BOOST_TEST(!(co_await lock.is_locked(asio::use_awaitable)));
  });
}

BOOST_FIXTURE_TEST_CASE(a_partial_cancellation_reaches_the_body_as_partial, lock_env) {
  run([&](asio::io_context& ctx, redisync::client& c) -> asio::awaitable<void> {
    auto lock = c.make_lock("partial");
    waits_for_cancellation body;
    asio::cancellation_signal signal;
    redisync::test::event done{ctx.get_executor()};
    std::exception_ptr failure;
    redisync::with_lock(lock, std::ref(body), asio::bind_cancellation_slot(signal.slot(), [&](std::exception_ptr e) {
                          failure = e;
                          done.notify();
                        }));
    co_await redisync::test::wait_until([&] { return body.started; }, 5s);
    signal.emit(asio::cancellation_type::partial);
    BOOST_TEST_REQUIRE(co_await done.wait(10s));
    BOOST_TEST(!failure);  // the body ended normally after seeing the cancellation
    BOOST_TEST_REQUIRE(body.seen.has_value());
    BOOST_TEST((*body.seen == asio::cancellation_type::partial));
    BOOST_TEST(!(co_await lock.is_locked(asio::use_awaitable)));
  });
}

BOOST_AUTO_TEST_SUITE_END()
