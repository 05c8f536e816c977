// The guide's examples (docs/guide.md), compiled with the tests: every ```cpp block of the guide and
// the README appears verbatim in a file of this folder (test/unit/docs_snippets_test.cpp checks).
#include <redisync/redisync.hpp>

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

namespace asio = boost::asio;
using asio::bind_cancellation_slot;
using asio::use_awaitable;
using namespace asio::experimental::awaitable_operators;
using namespace std::chrono_literals;

asio::awaitable<void> nested(redisync::owner const& me);
asio::awaitable<int> write_with_token(std::uint64_t token);
asio::awaitable<void> body(redisync::held& h);

void watch(redisync::client const& redis) {
  redisync::metrics_snapshot m = redis.metrics();                        // any thread, a few µs
  auto const& locks = m.of(redisync::primitive::lock);                   // fair_lock, read_lock, permits, ...
  std::uint64_t gave_up = locks.acquired(redisync::acquire_outcome::timed_out);
  std::uint64_t stalled = locks.lost_by(redisync::loss_cause::expired);  // renewals that came too late
  double mean_wait_s = locks.wait.count ? locks.wait.sum_s / locks.wait.count : 0;
}

void make_client(asio::any_io_executor ex) {
  redisync::client redis{ex, "redis://:secret@10.0.0.5:6379/0"};   // or a redisync::config
  redis.start();                                                     // or co_spawn(ex, redis.run(use_awaitable), ...)
}

asio::awaitable<void> owners(redisync::client& redis, std::string id) {
  redisync::owner me = redis.new_owner();
  auto lock = me.lock("orders:" + id);       // a handle: a name and an owner, no I/O
  auto outer = co_await lock.acquire(use_awaitable);
  co_await nested(me);                        // me.lock("orders:" + id) again: hold count 2
  co_await outer.release(use_awaitable);
}

asio::awaitable<void> cancelling(redisync::lock lock, asio::steady_timer& timer, asio::cancellation_signal& signal) {
  auto handler = [](boost::system::error_code, redisync::held) {};
  auto r = co_await (lock.acquire(use_awaitable) || timer.async_wait(use_awaitable));
  lock.acquire(bind_cancellation_slot(signal.slot(), handler));
}

asio::awaitable<void> bodies(redisync::owner me, redisync::lock lock, asio::steady_timer& timer) {
  int n = co_await redisync::with_lock(lock, [&](redisync::held& h) -> asio::awaitable<int> {
    co_return co_await write_with_token(h.token());
  });
  co_await redisync::with_lock(me.lock("report"), {.wait = 2s}, body);  // error::timeout after 2 s
  auto first = co_await (redisync::with_lock(lock, body) || timer.async_wait(use_awaitable));
}

asio::awaitable<void> data(redisync::client& redis, redisync::owner me, std::string sku) {
  redisync::resp::request get;
  get.push("GET", "stock:" + sku);
  std::optional<std::int64_t> stock = co_await redis.query<std::optional<std::int64_t>>(get, use_awaitable);

  redisync::response raw = co_await redis.exec(get, use_awaitable);  // every reply, errors included
  if (auto ec = redisync::check_replies(raw)) { /* a server error, as a typed code */ }
  auto value = redisync::read_reply<std::optional<std::string>>(raw.front());  // a boost::system::result

  static redisync::script const take{R"(
    local left = tonumber(redis.call('get', KEYS[1]) or '0')
    if left < tonumber(ARGV[1]) then return -1 end
    return redis.call('decrby', KEYS[1], ARGV[1])
  )"};
  std::vector<std::string> keys{"stock:" + sku}, args{"2"};
  redisync::resp::value left = co_await redis.eval(take, keys, args, use_awaitable);

  auto h = co_await me.lock("stock:" + sku).acquire(use_awaitable);
  bool const accepted = co_await redis.fenced_set({.fence_key = "{stock:" + sku + "}:fence",
                                                   .key = "{stock:" + sku + "}:count",
                                                   .value = "41",
                                                   .token = h.token()},
                                                  use_awaitable);
  if (me.holds("stock:" + sku)) { /* held here: no I/O */ }
  co_await h.release(use_awaitable);
}

asio::awaitable<void> ending(redisync::client& redis) {
  co_await redis.shutdown(5s, use_awaitable);  // releases every hold, then stops: ctx.run() returns
}

asio::awaitable<void> fair(redisync::owner const& me) {
  redisync::fair_lock fifo = me.fair_lock("reports");           // a handle: no I/O
  redisync::held turn = co_await fifo.acquire(use_awaitable);  // served in arrival order
  co_await turn.release(use_awaitable);
}

asio::awaitable<void> leased_permits(redisync::owner const& me) {
  redisync::permits gpus = me.permits("gpus");                   // a handle: no I/O
  bool set = co_await gpus.try_set_permits(4, use_awaitable);   // once, by whoever comes first
  redisync::held two = co_await gpus.acquire(2, use_awaitable);  // 2 permits, renewed by the watchdog
  std::uint64_t token = two.token();                            // a fencing token, like a lock's
  std::int64_t free = co_await gpus.available_permits(use_awaitable);  // 2
  co_await two.release(use_awaitable);                          // both back
  int n = co_await redisync::with_permit(gpus, 1, [](redisync::held&) -> asio::awaitable<int> { co_return 1; });
}

asio::awaitable<void> redisson_semaphore(redisync::owner const& me) {
  redisync::semaphore jobs = me.semaphore("jobs");               // Redisson's RSemaphore layout
  co_await jobs.try_set_permits(3, use_awaitable);
  co_await jobs.acquire(1, use_awaitable);                       // no hold: nothing renews, nothing expires
  bool more = co_await jobs.try_acquire(2, 500ms, use_awaitable);
  co_await jobs.release(1, use_awaitable);                       // at most what this owner took
  std::int64_t taken = co_await jobs.drain_permits(use_awaitable);
}

asio::awaitable<void> spinning(redisync::owner const& me, std::string id) {
  redisync::lock polling = me.lock("orders:" + id).spinning();  // any kind: fair, read, write too
  redisync::held h = co_await polling.acquire(use_awaitable);    // never subscribes
}

asio::awaitable<void> count_down_latch(redisync::client& redis) {
  redisync::latch loaded = redis.latch("shards-loaded");         // Redisson's RCountDownLatch layout
  bool set = co_await loaded.try_set_count(4, use_awaitable);   // false: a count was there already
  std::int64_t left = co_await loaded.count_down(use_awaitable);  // 3; at 0 every waiter is woken
  bool open = co_await loaded.wait(30s, use_awaitable);          // false if still closed after 30 s
  std::int64_t now = co_await loaded.count(use_awaitable);       // 0 once open (no key)
}

asio::awaitable<void> multi_lock(redisync::owner const& me) {
  redisync::multi_lock both = me.locks({me.lock("account:7"), me.fair_lock("account:9")});
  redisync::multi_held h = co_await both.acquire(use_awaitable);  // every member, or none
  std::vector<std::uint64_t> tokens = h.tokens();                 // one per member, in the order given
  redisync::hold_status status = h.status();                      // lost if any member is lost
  co_await h.release(use_awaitable);                              // every member
  auto three = me.locks({"a", "b", "c"});                          // reentrant locks by name
  std::optional<redisync::multi_held> maybe = co_await three.try_acquire(2s, use_awaitable);
}

asio::awaitable<void> leader_election(redisync::client& redis) {
  redisync::election jobs = redis.election("scheduler");
  redisync::held leading = co_await jobs.campaign("node-7", use_awaitable);  // waits to lead
  std::uint64_t term = leading.token();                      // only grows: fence writes with it
  std::optional<redisync::leader_info> now = co_await jobs.leader(use_awaitable);  // term and value
  co_await jobs.resign(leading, use_awaitable);               // the next candidate leads at once
  redisync::election_observer watch = jobs.observe();
  redisync::leader_change change = co_await watch.next(30s, use_awaitable);  // every change, in order
}

asio::awaitable<void> read_write(redisync::owner const& me) {
  redisync::read_write_lock prices = me.read_write_lock("prices");  // a handle: no I/O
  redisync::lock reading = prices.read();                          // shared with other readers
  redisync::lock writing = prices.write();                         // alone
  redisync::held w = co_await writing.acquire(use_awaitable);     // a fresh fencing token
  redisync::held r = co_await reading.acquire(use_awaitable);     // the writer may read too
  co_await w.release(use_awaitable);                              // a downgrade: still reading
  auto [ec, none] = co_await writing.try_acquire(1s, asio::as_tuple(use_awaitable));
  // ec == redisync::error::upgrade_refused, at once: a reader cannot become a writer
  co_await r.release(use_awaitable);
}
