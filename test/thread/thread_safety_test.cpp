// One client shared by the threads of a pool: locks taken, nested, released and dropped from every
// thread, guards read from threads that did not make them, while the connection is killed again and
// again. Built with ThreadSanitizer by the `tsan` preset; any data race fails the run.

#include <redisync/redisync.hpp>

#include "testbed/redis_server.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

// The id of the client connection named `name`, from CLIENT LIST.
std::string client_id(redisync::process::redis_server const& redis, std::string const& name) {
  std::string const list{redis.command({"CLIENT", "LIST"}).text()};
  auto const at = list.find(" name=" + name + " ");
  if (at == std::string::npos) return {};
  auto const line = list.rfind('\n', at) == std::string::npos ? 0 : list.rfind('\n', at) + 1;
  auto const id = line + 3;  // "id="
  return list.substr(id, list.find(' ', id) - id);
}

constexpr int workers = 12;
constexpr int sections_per_worker = 60;

struct shared_state {
  std::atomic<int> inside[3] = {0, 0, 0};
  std::atomic<int> overlaps{0};
  std::atomic<int> sections{0};
  std::atomic<bool> killing{true};
  std::mutex failures_mutex;
  std::vector<std::string> failures;  // the acquires that failed, by error

  void failed(boost::system::error_code const& ec) {
    std::lock_guard const guard{failures_mutex};
    failures.push_back(ec.message());
  }
};

asio::awaitable<void> worker(redisync::client& c, shared_state& s, int id) {
  auto ex = co_await asio::this_coro::executor;
  auto me = c.new_owner();
  for (int i = 0; i < sections_per_worker; ++i) {
    int const k = (id + i) % 3;
    auto lock = me.lock("shared-" + std::to_string(k));
    auto [ec, outer] = co_await lock.acquire(asio::as_tuple(asio::use_awaitable));
    if (ec) {
      s.failed(ec);
      continue;
    }
    co_await asio::post(ex, asio::use_awaitable);  // to another thread, maybe
    if (++s.inside[k] > 1) ++s.overlaps;
    auto [iec, inner] = co_await lock.acquire(asio::as_tuple(asio::use_awaitable));  // re-entry
    (void)outer.status();
    (void)outer.valid_until();
    --s.inside[k];
    if (!iec) {
      if (i % 2 == 0) {
        co_await inner.release(asio::as_tuple(asio::use_awaitable));
      } else {
        co_await lock.release(asio::as_tuple(asio::use_awaitable));  // the innermost level
      }
    }
    co_await asio::post(ex, asio::use_awaitable);
    if (i % 3 == 0) {
      outer = redisync::held{};  // dropped on this thread: released in the background
    } else {
      co_await outer.release(asio::as_tuple(asio::use_awaitable));
    }
    ++s.sections;
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(thread_safety)

BOOST_AUTO_TEST_CASE(a_client_shared_by_four_threads_while_its_connection_is_killed) {
  redisync::process::redis_server redis;
  asio::thread_pool pool{4};
  auto cfg = redisync::config::from_url(redis.url());
  cfg.client_name = "shared";
  cfg.reconnect_delay_min = 5ms;
  cfg.reconnect_delay_max = 50ms;
  cfg.watchdog_lease = 900ms;
  cfg.subscription_linger = 20ms;
  shared_state s;
  {
    redisync::client c{pool.get_executor(), cfg};
    c.start();
    std::thread killer{[&] {
      while (s.killing) {
        if (auto const id = client_id(redis, "shared"); !id.empty()) redis.command({"CLIENT", "KILL", "ID", id});
        std::this_thread::sleep_for(50ms);
      }
    }};
    std::vector<std::future<void>> running;
    for (int w = 0; w < workers; ++w) running.push_back(asio::co_spawn(pool, worker(c, s, w), asio::use_future));
    for (auto& w : running) {
      BOOST_TEST_REQUIRE((w.wait_for(120s) == std::future_status::ready));
      w.get();
    }
    s.killing = false;
    killer.join();
    auto const stats = c.metrics();
    BOOST_TEST(stats.waiters == 0u);
    BOOST_TEST(stats.connects > 1u);  // the kills were noticed
    c.stop();
  }
  pool.join();
  BOOST_TEST(s.overlaps == 0);
  std::string failed_with;
  for (auto const& failure : s.failures) failed_with += " [" + failure + "]";
  BOOST_TEST(s.failures.empty(), s.failures.size() << " acquires failed:" << failed_with);
  BOOST_TEST(s.sections == workers * sections_per_worker);
}

BOOST_AUTO_TEST_SUITE_END()
