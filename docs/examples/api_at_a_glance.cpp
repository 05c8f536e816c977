// The README's "API at a glance", compiled with the tests.
#include <redisync/redisync.hpp>

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

namespace asio = boost::asio;
using asio::use_awaitable;
using namespace asio::experimental::awaitable_operators;
using namespace std::chrono_literals;

asio::awaitable<void> work();

asio::awaitable<void> tour(asio::any_io_executor ex) {
  redisync::client c{ex, "redis://127.0.0.1:6379"};        // one per process; or a config, or an io_context&
  c.start();                                               // or co_await c.run(use_awaitable)
  redisync::owner me = c.new_owner();                      // "<client-uuid>:<n>"; c.make_owner(id)
  redisync::lock lock = me.lock("orders:42");              // a handle: no I/O
  redisync::fair_lock fifo = me.fair_lock("reports");      // the same operations, served in arrival order
  redisync::read_write_lock rw = me.read_write_lock("prices");  // rw.read(), rw.write(): lock handles
  redisync::permits gpus = me.permits("gpus");             // leased permits: a dead holder's come back; fair_permits()
  redisync::semaphore jobs = me.semaphore("jobs");         // Redisson's RSemaphore, shared with Redisson
  redisync::latch ready = c.latch("shards-loaded");        // Redisson's RCountDownLatch: try_set_count, count_down
  redisync::multi_lock both = me.locks({lock, fifo});      // several locks as one hold: all or none, no deadlock
  redisync::election boss = c.election("scheduler");       // campaign(value) -> held with the term as token
  redisync::held h = co_await lock.acquire(use_awaitable); // waits; the watchdog renews the lease
  redisync::held fixed = co_await lock.acquire(30s, use_awaitable);            // re-enters; fixed lease
  std::optional<redisync::held> maybe = co_await lock.try_acquire(2s, use_awaitable);  // empty if not in 2 s
  std::uint64_t token = h.token();                         // fencing token
  auto deadline = h.valid_until();                         // no other holder before this
  redisync::hold_status status = h.status();               // held, uncertain, lost or released
  bool here = me.holds("orders:42");                       // local: no I/O
  co_await fixed.release(use_awaitable);                   // one level; also h.loss_slot(ex)
  auto first = co_await (work() || h.wait_lost(use_awaitable));  // a loss cancels work; index 1: lost or released
  bool locked = co_await lock.is_locked(use_awaitable);    // also hold_count(), remaining_lease()
  int n = co_await redisync::with_lock(lock, [](redisync::held&) -> asio::awaitable<int> { co_return 1; });
  redisync::held two = co_await gpus.acquire(2, use_awaitable);  // k permits as one hold: lease, token, status
  co_await jobs.acquire(1, use_awaitable);                 // also try_acquire, release(k), available_permits()
  bool open = co_await ready.wait(30s, use_awaitable);     // every waiter woken when the count reaches 0
  redisync::resp::request get;
  get.push("GET", "stock:42");
  std::optional<int> stock = co_await c.query<std::optional<int>>(get, use_awaitable);  // any integer type, double, strings
  redisync::response raw = co_await c.exec(get, use_awaitable);   // raw replies; check_replies(raw)
  redisync::script const twice{"return redis.call('incrby', KEYS[1], 2)"};
  std::vector<std::string> keys{"n"};
  redisync::resp::value v = co_await c.eval(twice, keys, {}, use_awaitable);  // EVALSHA, loaded once
  bool written = co_await c.fenced_set({.fence_key = "{o:42}:fence", .key = "{o:42}:state", .value = "paid", .token = token},
                                       use_awaitable);   // refused for a stale token
  bool was_held = co_await lock.force_release(use_awaitable);   // whoever holds it
  redisync::metrics_snapshot m = c.metrics();              // acquires, waits, holds, losses, renewals; any thread
  co_await c.shutdown(5s, use_awaitable);                  // releases every hold, then stops
}
