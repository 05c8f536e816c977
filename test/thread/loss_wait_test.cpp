// Every wait for a loss (held::wait_lost, multi_held::wait_lost, loss_slot) on locks, multi-locks,
// leased permits and leadership, used from the threads of a pool: waits started, cancelled from
// another thread, completed by a release, a drop or a loss, in an order chosen by a seeded random
// generator. Each wait must complete exactly once, and nothing may race (ASan here, TSan in the
// tsan preset). REDISYNC_SEED=<n> replays a run.

#include <redisync/redisync.hpp>

#include "testbed/redis_server.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <future>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

constexpr int tasks = 8;
constexpr int rounds_per_task = 150;

std::uint64_t seed_of_run() {
  if (char const* s = std::getenv("REDISYNC_SEED")) return std::strtoull(s, nullptr, 10);
  return std::random_device{}();
}

// What became of the waits: each started one ends once, and the count of ends of each kind adds up.
struct tally {
  std::atomic<int> started{0};
  std::atomic<int> ended{0};
  std::atomic<int> ended_twice{0};
  std::atomic<int> slots_fired{0};  // works stopped by a loss
  std::mutex m;
  std::condition_variable changed;
  std::vector<std::string> failures;

  void fail(std::string what) {
    std::lock_guard const g{m};
    failures.push_back(std::move(what));
  }
  void count_end() {
    std::lock_guard const g{m};
    ++ended;
    changed.notify_all();
  }
  // Waits at most `bound` until every wait started has ended.
  bool all_ended_within(std::chrono::seconds bound) {
    std::unique_lock g{m};
    return changed.wait_for(g, bound, [this] { return ended >= started; });
  }
};

// One wait's completion, counted once; a second completion is a failure.
struct wait_end {
  tally& t;
  std::atomic<bool> done{false};
  void operator()(boost::system::error_code ec, redisync::hold_status end) {
    if (done.exchange(true)) {
      ++t.ended_twice;
      return;
    }
    t.count_end();
    bool const ended_well = !ec && (end == redisync::hold_status::lost || end == redisync::hold_status::released);
    if (!ended_well && ec != asio::error::operation_aborted) t.fail("wait_lost ended with " + ec.message());
  }
};

enum class kind_of_hold { lock, multi_lock, permits, leadership };

// Starts a random number of waits on `h` (a held or a multi_held): plain callbacks, callbacks whose
// cancellation is emitted later from another thread of the pool.
template <class Hold>
void start_waits(Hold& h, asio::thread_pool& pool, tally& t, std::mt19937_64& rng) {
  int const n = static_cast<int>(rng() % 4);
  for (int i = 0; i < n; ++i) {
    auto end = std::make_shared<wait_end>(t);
    ++t.started;
    if (rng() % 2 == 0) {
      h.wait_lost([end](boost::system::error_code ec, redisync::hold_status s) { (*end)(ec, s); });
      continue;
    }
    auto signal = std::make_shared<asio::cancellation_signal>();
    h.wait_lost(asio::bind_cancellation_slot(
        signal->slot(), [end, signal](boost::system::error_code ec, redisync::hold_status s) { (*end)(ec, s); }));
    // Emitted from whichever thread takes it: before, during or after the end of the hold.
    auto const type = rng() % 2 == 0 ? asio::cancellation_type::terminal : asio::cancellation_type::total;
    asio::post(pool, [signal, type] { signal->emit(type); });
  }
}

// Work under a hold, a coroutine bound to its loss slot on a strand: it runs until the loss
// cancels it or the test stops it after the hold ended otherwise. The guard owns the slot's
// signal, so the guard is kept until the work has ended (as any cancellation_signal must outlive
// what is bound to it).
struct work_under_hold {
  using done_channel = asio::experimental::concurrent_channel<void(boost::system::error_code)>;
  explicit work_under_hold(asio::thread_pool& pool) : strand{asio::make_strand(pool)}, timer{strand}, done{pool, 1} {}

  asio::strand<asio::thread_pool::executor_type> strand;
  asio::steady_timer timer;
  done_channel done;
  bool stopped_by_test = false;  // on the strand
  bool stopped_by_loss = false;  // on the strand; read after `done`

  static std::shared_ptr<work_under_hold> start(redisync::held& h, asio::thread_pool& pool) {
    auto w = std::make_shared<work_under_hold>(pool);
    w->timer.expires_at(asio::steady_timer::time_point::max());
    // The work keeps `w` as a parameter: a lambda's captures die with the lambda, before the frame.
    auto work = [](std::shared_ptr<work_under_hold> w) -> asio::awaitable<void> {
      co_await w->timer.async_wait(asio::use_awaitable);
    };
    auto ended = [w](std::exception_ptr e) {
      w->stopped_by_loss = e && !w->stopped_by_test;
      w->done.try_send(boost::system::error_code{});
    };
    asio::co_spawn(w->strand, work(w), asio::bind_cancellation_slot(h.loss_slot(w->strand), ended));
    return w;
  }
  // Stops the work (if the loss did not) and waits until it has ended; true if the loss stopped it.
  static asio::awaitable<bool> stop_and_wait(std::shared_ptr<work_under_hold> w) {
    // A wait that the loss cancelled has no completion to cancel any more (it may not have run yet).
    asio::post(w->strand, [w] { w->stopped_by_test = w->timer.cancel() > 0; });
    co_await w->done.async_receive(asio::use_awaitable);
    co_return w->stopped_by_loss;
  }
};

// Ends `h` in one of three ways, maybe after moving to another thread: its release, dropping the
// guard (released in the background), or (a plain lock's) deleting its key: a loss the watchdog
// finds.
template <class Hold>
asio::awaitable<void> end_hold(Hold& h, redisync::client& c, std::mt19937_64& rng, bool deletable,
                               bool droppable = true) {
  auto ex = co_await asio::this_coro::executor;
  if (rng() % 2 == 0) co_await asio::post(ex, asio::use_awaitable);
  switch (rng() % 8) {
    case 0:
      if (droppable) {
        h = Hold{};
        break;
      }
      [[fallthrough]];
    case 1:
      if constexpr (std::is_same_v<Hold, redisync::held>) {
        if (deletable) {
          // The next renewal (a third of the lease) finds the field gone: the hold is lost.
          redisync::resp::request del;
          del.push("DEL", h.name());
          co_await c.exec(std::move(del), asio::as_tuple(asio::use_awaitable));
          co_await h.wait_lost(asio::as_tuple(asio::use_awaitable));
          break;
        }
      }
      [[fallthrough]];
    default:
      co_await h.release(asio::as_tuple(asio::use_awaitable));
  }
}

asio::awaitable<void> task(redisync::client& c, asio::thread_pool& pool, tally& t, int id, std::uint64_t seed) {
  std::mt19937_64 rng{seed + static_cast<std::uint64_t>(id)};
  auto me = c.new_owner();
  auto const own = "loss-wait-" + std::to_string(id);
  auto permits = me.permits("loss-wait-permits");
  auto election = c.election(own + "-election");
  auto const multi = me.locks(std::vector<std::string>{own + "-a", own + "-b", own + "-c"});
  for (int round = 0; round < rounds_per_task; ++round) {
    auto const kind = static_cast<kind_of_hold>(rng() % 4);
    if (kind == kind_of_hold::multi_lock) {
      auto [ec, h] = co_await multi.acquire(asio::as_tuple(asio::use_awaitable));
      if (ec) {
        t.fail("multi-lock acquire: " + ec.message());
        continue;
      }
      start_waits(h, pool, t, rng);
      co_await end_hold(h, c, rng, false);
      continue;
    }
    boost::system::error_code ec;
    redisync::held h;
    if (kind == kind_of_hold::lock) {
      std::tie(ec, h) = co_await me.lock(own).acquire(asio::as_tuple(asio::use_awaitable));
    } else if (kind == kind_of_hold::permits) {
      std::tie(ec, h) = co_await permits.acquire(1, asio::as_tuple(asio::use_awaitable));
    } else {
      std::tie(ec, h) = co_await election.campaign(own, asio::as_tuple(asio::use_awaitable));
    }
    if (ec) {
      t.fail("acquire: " + ec.message());
      continue;
    }
    start_waits(h, pool, t, rng);
    if (rng() % 3 != 0) {
      co_await end_hold(h, c, rng, kind == kind_of_hold::lock);
      continue;
    }
    auto work = work_under_hold::start(h, pool);
    co_await end_hold(h, c, rng, kind == kind_of_hold::lock, false);
    bool const lost = h.status() == redisync::hold_status::lost;
    bool const stopped_by_loss = co_await work_under_hold::stop_and_wait(work);
    if (lost != stopped_by_loss) t.fail(lost ? "a loss did not stop the work" : "the work stopped without a loss");
    if (stopped_by_loss) ++t.slots_fired;
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(loss_waits)

BOOST_AUTO_TEST_CASE(every_loss_wait_ends_once_whatever_thread_ends_or_cancels_it) {
  auto const seed = seed_of_run();
  BOOST_TEST_MESSAGE("loss waits: REDISYNC_SEED=" << seed);
  redisync::process::redis_server redis;
  asio::thread_pool pool{3};
  auto cfg = redisync::config::from_url(redis.url());
  cfg.watchdog_lease = 900ms;  // a deleted key is found lost within 300 ms
  tally t;
  {
    redisync::client c{pool.get_executor(), cfg};
    c.start();
    BOOST_TEST_REQUIRE(c.new_owner().permits("loss-wait-permits").try_set_permits(tasks, asio::use_future).get());
    std::vector<std::future<void>> running;
    for (int i = 0; i < tasks; ++i) running.push_back(asio::co_spawn(pool, task(c, pool, t, i, seed), asio::use_future));
    for (auto& r : running) {
      BOOST_TEST_REQUIRE((r.wait_for(180s) == std::future_status::ready), "a task did not finish; seed " << seed);
      r.get();
    }
    // Every hold has ended, so every wait ends.
    BOOST_TEST(t.all_ended_within(30s), t.ended << " of " << t.started << " waits ended; seed " << seed);
    c.stop();
  }
  pool.join();
  BOOST_TEST(t.ended == t.started, "seed " << seed);
  BOOST_TEST(t.ended_twice == 0, "seed " << seed);
  std::string failed;
  for (auto const& f : t.failures) failed += " [" + f + "]";
  BOOST_TEST(t.failures.empty(), t.failures.size() << " failures, seed " << seed << ":" << failed);
  BOOST_TEST_MESSAGE("loss waits: " << t.started << " waits ended once each; " << t.slots_fired
                                    << " works stopped by a loss slot");
}

BOOST_AUTO_TEST_SUITE_END()
