// S4 of WORKLOADS.md: the fair lock at scale. (a) S4_N waiters in one process queue on one lock
// while a holder keeps it S4_HOLD_S s, then drain; (b) S4_LOCKS locks, each held, with 2 waiters
// each, for S4_HOLD_S s, then drain. What waiting costs Redis and the client per waiter-second,
// the drain time, and whether the order held.

#include "cli/lab/bench/bench.hpp"

#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>

namespace redisync::cli::bench {

namespace {

using boost::system::error_code;

// One part: `locks` locks (named `prefix` + i) held by `holders`, each with `per_lock` waiters of
// `b.c` queued in turn; held `hold_s` s, then released. Waiter i waits on lock i / per_lock.
asio::awaitable<json::object> queue_and_drain(bench_context& b, client& holders, std::string const& prefix,
                                              std::int64_t locks, std::int64_t per_lock) {
  auto const lock_name = [&](std::int64_t i) { return prefix + std::to_string(i); };
  auto const hold_s = b.p.s4_hold_s;
  auto const started = clock_type::now();
  std::vector<held> holds;
  holds.reserve(static_cast<std::size_t>(locks));
  for (std::int64_t i = 0; i < locks; ++i) {
    holds.push_back(co_await holders.new_owner().fair_lock(lock_name(i)).acquire(asio::use_awaitable));
  }
  auto const idle_rss = rss_kb();
  auto const idle_memory = (co_await server_totals_now(b.admin)).used_memory;
  auto const n = locks * per_lock;
  // Shared with the waiters' handlers, which may outlive this frame if it ends by an exception.
  struct tally {
    std::vector<std::vector<std::int64_t>> served;  // per lock, the waiters in the order they held it
    std::int64_t done = 0;
    std::int64_t errors = 0;
    clock_type::time_point last{};
  };
  auto t = std::make_shared<tally>();
  t->served.resize(static_cast<std::size_t>(locks));
  // Each round queues one waiter on every lock. The first attempts go out on one connection in
  // the order of the calls, so that is the order each lock's queue must serve.
  for (std::int64_t round = 0; round < per_lock; ++round) {
    for (std::int64_t l = 0; l < locks; ++l) {
      auto const i = l * per_lock + round;
      b.c.new_owner().fair_lock(lock_name(l)).acquire([t, i, l](error_code ec, held h) {
        ++t->done;
        t->last = clock_type::now();
        if (ec) {
          ++t->errors;
          return;
        }
        t->served[static_cast<std::size_t>(l)].push_back(i);
        h.release(asio::detached);
      });
    }
  }
  co_await wait_until([&] { return b.c.metrics().waiters + std::size_t(t->errors) >= std::size_t(n); }, std::chrono::seconds{600});
  co_await wait_until_scripts_settle(b.admin);
  auto const queued_s = std::chrono::duration<double>(clock_type::now() - started).count();
  auto const waiting_rss = rss_kb();
  // Measured over what is left of the hold, at least half of it.
  auto const window = std::max(std::chrono::milliseconds{hold_s * 500},
                               std::chrono::milliseconds{hold_s * 1000} -
                                   std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - started));
  auto const cpu0 = process_cpu_s();
  auto const server0 = co_await server_totals_now(b.admin);
  co_await sleep_for(window);
  auto const cpu1 = process_cpu_s();
  auto const server1 = co_await server_totals_now(b.admin);
  auto const released = clock_type::now();
  for (auto& h : holds) h.release(asio::detached);
  bool const drained = co_await wait_until([&] { return t->done >= n; }, std::chrono::seconds{600});
  double const drain_s = std::chrono::duration<double>(t->last - released).count();
  std::int64_t order_violations = 0;
  for (auto const& order : t->served) {
    for (std::size_t k = 1; k < order.size(); ++k) order_violations += order[k] < order[k - 1] ? 1 : 0;
  }
  double const seconds = std::chrono::duration<double>(window).count();
  double const waiter_s = double(n) * seconds;
  co_return json::object{
      {"locks", locks},
      {"waiters_per_lock", per_lock},
      {"n", n},
      {"capped", !drained},
      {"errors", t->errors},
      {"queue_all_s", r2(queued_s)},
      {"window_s", r2(seconds)},
      {"server_cpu_pct", r2(100 * (server1.cpu_s - server0.cpu_s) / seconds)},
      {"server_us_per_waiter_s", r2(1e6 * (server1.cpu_s - server0.cpu_s) / waiter_s)},
      {"calls_per_s", r2(double(all_calls(server0.calls, server1.calls)) / seconds)},
      {"client_cpu_pct", r2(100 * (cpu1 - cpu0) / seconds)},
      {"rss_per_waiter_kb", r2(double(waiting_rss - idle_rss) / double(n))},
      {"server_bytes_per_waiter", r2((server0.used_memory - idle_memory) / double(n))},
      {"drain_s", r2(drain_s)},
      {"order_violations", order_violations}};
}

}  // namespace

asio::awaitable<json::object> s4(bench_context& b) {
  client holders{co_await asio::this_coro::executor, b.c.cfg()};
  holders.start();
  auto one_lock = co_await queue_and_drain(b, holders, "bench:s4:lock", 1, b.p.s4_n);
  json::object many_locks;
  if (b.p.s4_locks > 0) many_locks = co_await queue_and_drain(b, holders, "bench:s4:locks:", b.p.s4_locks, 2);
  holders.stop();
  co_await sleep_for(std::chrono::milliseconds{2 * b.c.cfg().fair_waiter_liveness.count()});
  auto const keys = co_await count_keys(b.admin);
  bool const ok = one_lock.at("errors").as_int64() == 0 && one_lock.at("order_violations").as_int64() == 0 &&
                  (many_locks.empty() ||
                   (many_locks.at("errors").as_int64() == 0 && many_locks.at("order_violations").as_int64() == 0));
  bool const capped = one_lock.at("capped").as_bool() || (!many_locks.empty() && many_locks.at("capped").as_bool());
  co_return json::object{{"capped", capped},
                         {"one_lock", one_lock},
                         {"many_locks", many_locks},
                         {"keys_left", keys.live},
                         {"keys_without_expiry", keys.without_expiry},
                         {"safety_ok", ok}};
}

}  // namespace redisync::cli::bench
