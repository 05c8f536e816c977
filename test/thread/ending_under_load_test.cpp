// Clients stopped and shut down at random points of mixed workloads on a 4-thread pool: from a
// random thread, once or twice, shutdown and stop mixed, with handles and held objects that outlive
// the client. Nothing crashes (the tier also runs under ThreadSanitizer, the debug build under
// AddressSanitizer), every operation completes exactly once, and after a shutdown that completed
// in time no lock is left in Redis. Seeded: REDISYNC_SEED=<n> repeats a run, whose seed each
// round prints; REDISYNC_ROUNDS sets how many rounds (default 12).

#include <redisync/redisync.hpp>

#include "testbed/redis_server.hpp"
#include "support/lock_fixture.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cstdlib>
#include <future>
#include <mutex>
#include <random>
#include <thread>

namespace asio = boost::asio;
using namespace redisync::test::lock_names;

namespace {

// Every operation started, and how many times it completed.
class ledger {
 public:
  std::size_t start() {
    std::lock_guard const guard{mutex_};
    completions_.push_back(0);
    return completions_.size() - 1;
  }
  void complete(std::size_t id) {
    std::lock_guard const guard{mutex_};
    ++completions_[id];
  }
  // The ids of operations that did not complete exactly once.
  std::vector<std::size_t> not_once() const {
    std::lock_guard const guard{mutex_};
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < completions_.size(); ++i) {
      if (completions_[i] != 1) out.push_back(i);
    }
    return out;
  }
  std::size_t size() const {
    std::lock_guard const guard{mutex_};
    return completions_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::vector<int> completions_;
};

// Runs `initiate(handler)` and waits for the handler's result: the handler counts its calls in
// the ledger, so an operation that completed twice shows there (this coroutine takes the first).
template <class... R, class Initiate>
asio::awaitable<std::tuple<R...>> once(ledger& l, Initiate initiate) {
  auto ex = co_await asio::this_coro::executor;
  auto const id = l.start();
  struct state {
    explicit state(asio::any_io_executor e) : done{std::move(e), asio::steady_timer::time_point::max()} {}
    std::optional<std::tuple<R...>> result;
    asio::steady_timer done;
  };
  auto s = std::make_shared<state>(ex);
  initiate(asio::bind_executor(ex, [&l, id, s](R... r) {
    l.complete(id);
    if (!s->result) s->result.emplace(std::move(r)...);
    s->done.cancel();
  }));
  while (!s->result) co_await s->done.async_wait(asio::as_tuple(asio::use_awaitable));
  co_return std::move(*s->result);
}

// A counted handler for an operation nobody waits for.
template <class... R>
auto counted(ledger& l, asio::any_io_executor ex) {
  return asio::bind_executor(std::move(ex), [&l, id = l.start()](R...) { l.complete(id); });
}

bool ending(error_code ec) {
  return ec == error::not_connected || ec == error::shutting_down || ec == error::not_started;
}

struct round_state {
  ledger ops;
  std::atomic<bool> stop{false};
  std::mutex outliving_mutex;
  std::vector<held> outliving;  // holds kept past the client
  std::vector<redisync::lock> handles;
};

redisync::lock handle_of(redisync::owner const& me, int kind, int name) {
  auto const n = std::to_string(name);
  switch (kind) {
    case 0: return me.lock("r" + n);
    case 1: return me.fair_lock("f" + n);
    case 2: return me.read_write_lock("w" + n).read();
    default: return me.read_write_lock("w" + n).write();
  }
}

asio::awaitable<void> sleep_up_to(std::mt19937& rng, int ms) {
  asio::steady_timer t{co_await asio::this_coro::executor,
                       std::chrono::milliseconds{std::uniform_int_distribution<int>{0, ms}(rng)}};
  co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
}

// One task of the workload: random operations until the client ends or the round stops.
asio::awaitable<void> task(redisync::client& c, round_state& s, std::uint32_t seed) {
  std::mt19937 rng{seed};
  auto ex = co_await asio::this_coro::executor;
  auto me = c.new_owner();
  auto pick = [&](int n) { return std::uniform_int_distribution<int>{0, n - 1}(rng); };
  while (!s.stop) {
    auto lock = handle_of(pick(4) == 0 ? c.new_owner() : me, pick(4), pick(3));
    switch (pick(6)) {
      case 0: {  // acquire, maybe nest, hold, release through the guard
        auto acquire = [&](auto h) { lock.acquire(std::move(h)); };
        auto [ec, h] = co_await once<error_code, held>(s.ops, acquire);
        if (ending(ec)) co_return;
        if (ec) break;
        if (pick(2) == 0) {
          auto [nec, inner] = co_await once<error_code, held>(s.ops, acquire);
          if (!nec) inner.release(counted<error_code>(s.ops, ex));
        }
        co_await sleep_up_to(rng, 3);
        auto release = [&](auto handler) { h.release(std::move(handler)); };
        co_await once<error_code>(s.ops, release);
        break;
      }
      case 1: {  // a bounded wait, released through the handle
        auto const wait = std::chrono::milliseconds{pick(20)};
        auto try_acquire = [&](auto h) { lock.try_acquire(wait, std::move(h)); };
        auto [ec, h] = co_await once<error_code, std::optional<held>>(s.ops, try_acquire);
        if (ending(ec)) co_return;
        if (h) {
          auto release = [&](auto handler) { lock.release(std::move(handler)); };
          co_await once<error_code>(s.ops, release);
        }
        break;
      }
      case 2: {  // a fixed lease with a loss wait, dropped: released by the guard's destructor
        auto acquire = [&](auto h) { lock.acquire(std::chrono::milliseconds{200 + pick(800)}, std::move(h)); };
        auto [ec, h] = co_await once<error_code, held>(s.ops, acquire);
        if (ending(ec)) co_return;
        if (!ec) h.wait_lost(counted<error_code, hold_status>(s.ops, ex));
        break;
      }
      case 3: {  // with_lock
        auto body = [pause = std::chrono::milliseconds{pick(3)}](held&) -> asio::awaitable<void> {
          asio::steady_timer t{co_await asio::this_coro::executor, pause};
          co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
        };
        redisync::with_lock(lock, {.wait = std::chrono::milliseconds{pick(50)}}, body,
                            counted<std::exception_ptr>(s.ops, ex));
        co_await sleep_up_to(rng, 3);
        break;
      }
      case 4: {  // a hold and a handle that outlive the client
        auto acquire = [&](auto h) { lock.acquire(std::move(h)); };
        auto [ec, h] = co_await once<error_code, held>(s.ops, acquire);
        if (ending(ec)) co_return;
        std::lock_guard const guard{s.outliving_mutex};
        if (!ec) s.outliving.push_back(std::move(h));
        s.handles.push_back(lock);
        break;
      }
      default: {  // a plain command on the same connection
        redisync::resp::request ping;
        ping.push("PING");
        auto exec = [&](auto h) { c.exec(std::move(ping), std::move(h)); };
        auto [ec, replies] = co_await once<error_code, redisync::response>(s.ops, exec);
        if (ending(ec)) co_return;
        break;
      }
    }
  }
}

// How a round ends the client: shutdown, stop, or both, once or twice, from the test's thread or
// from one of the pool's.
enum class ending_kind { shutdown, stop, shutdown_then_stop, stop_then_shutdown, shutdown_twice, stop_twice };

std::uint32_t first_seed() {
  if (auto const* s = std::getenv("REDISYNC_SEED")) return static_cast<std::uint32_t>(std::strtoul(s, nullptr, 10));
  return std::random_device{}();
}

int rounds() {
  if (auto const* s = std::getenv("REDISYNC_ROUNDS")) return std::atoi(s);
  return 12;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(ending_under_load)

BOOST_AUTO_TEST_CASE(clients_ended_at_random_points_complete_every_operation_once_and_leave_no_lock) {
  redis_server redis;
  auto const seed = first_seed();
  BOOST_TEST_MESSAGE("REDISYNC_SEED=" << seed);
  std::mt19937 rng{seed};
  for (int round = 0; round < rounds(); ++round) {
    auto const round_seed = static_cast<std::uint32_t>(rng());
    std::mt19937 r{round_seed};
    auto const how = static_cast<ending_kind>(std::uniform_int_distribution<int>{0, 5}(r));
    auto const delay = std::chrono::milliseconds{std::uniform_int_distribution<int>{0, 300}(r)};
    bool const from_pool = r() % 2 == 0;
    BOOST_TEST_CONTEXT("round " << round << " (seed " << round_seed << ", ending " << static_cast<int>(how)
                                << " after " << delay.count() << " ms" << (from_pool ? ", from the pool" : "") << ")") {
      redis.command({"FLUSHALL"});
      round_state s;
      asio::thread_pool pool{4};
      std::vector<std::future<void>> tasks;
      std::optional<error_code> shutdown_result;
      {
        auto cfg = redisync::config::from_url(redis.url());
        cfg.watchdog_lease = 600ms;
        cfg.subscription_linger = 20ms;
        cfg.fair_waiter_liveness = 300ms;
        redisync::client c{pool.get_executor(), cfg};
        c.start();
        for (int t = 0; t < 12; ++t) {
          tasks.push_back(asio::co_spawn(asio::make_strand(pool), task(c, s, static_cast<std::uint32_t>(r())),
                                         asio::use_future));
        }
        std::this_thread::sleep_for(delay);  // a random point of the workload, not a synchronisation
        std::vector<std::future<error_code>> shutdowns;
        auto end_once = [&](bool shutdown) {
          auto act = [&c, &shutdowns, shutdown] {
            if (!shutdown) return c.stop();
            auto p = std::make_shared<std::promise<error_code>>();
            shutdowns.push_back(p->get_future());
            c.shutdown(3s, [p](error_code ec) { p->set_value(ec); });
          };
          if (!from_pool) return act();
          asio::post(pool, asio::use_future(act)).wait();
        };
        bool const shutdown_first = how == ending_kind::shutdown || how == ending_kind::shutdown_then_stop ||
                                    how == ending_kind::shutdown_twice;
        end_once(shutdown_first);
        if (how == ending_kind::shutdown_then_stop || how == ending_kind::stop_twice) end_once(false);
        if (how == ending_kind::stop_then_shutdown || how == ending_kind::shutdown_twice) end_once(true);
        for (auto& f : shutdowns) {
          BOOST_TEST_REQUIRE((f.wait_for(20s) == std::future_status::ready), "a shutdown did not complete");
          auto const ec = f.get();
          if (!shutdown_result || !*shutdown_result) shutdown_result = ec;
        }
        // A shutdown that completed in time, with no stop before it, released every hold.
        if (how == ending_kind::shutdown || how == ending_kind::shutdown_twice) {
          BOOST_TEST_REQUIRE(shutdown_result.has_value());
          if (!*shutdown_result) {
            for (auto const& k : redisync::test::lock_keys(redis)) {
              auto const fields = redis.command({"HGETALL", k});
              std::string text;
              for (auto const& e : fields.elements()) text += " " + std::string{e.text()};
              BOOST_TEST(false, "left after shutdown: " << k << ", PTTL " << redis.command({"PTTL", k}).integer()
                                                        << ", fields" << text);
            }
          } else {
            BOOST_TEST_MESSAGE("shutdown: " << shutdown_result->message());
          }
        }
        s.stop = true;
        for (auto& t : tasks) BOOST_TEST_REQUIRE((t.wait_for(30s) == std::future_status::ready), "a task hung");
      }
      // The client is gone; its holds and handles are not.
      {
        std::lock_guard const guard{s.outliving_mutex};
        for (auto& h : s.outliving) {
          (void)h.status();
          h.release(counted<error_code>(s.ops, pool.get_executor()));
        }
        for (auto& l : s.handles) l.acquire(counted<error_code, held>(s.ops, pool.get_executor()));
        s.outliving.clear();
      }
      pool.join();
      // The last handles go while the pool, their client's executor, still exists.
      s.handles.clear();
      BOOST_TEST_MESSAGE(s.ops.size() << " operations");
      auto const bad = s.ops.not_once();
      BOOST_TEST(bad.empty(), bad.size() << " of " << s.ops.size() << " operations did not complete exactly once");
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
