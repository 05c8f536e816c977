// W4 of WORKLOADS.md: W4_C tasks share one semaphore of W4_PERMITS permits, W4_M acquires in all;
// each acquire is timed, then the task counts itself in flight (the most at once must never pass
// the permits), does one round trip of work (INCR) and gives the permit back. Leased permits by
// default (renewed like redis-semaphore's), or Redisson's semaphore with --kind semaphore.

#include "cli/lab/bench/bench.hpp"

#include <boost/asio/use_awaitable.hpp>

namespace redisync::cli::bench {

asio::awaitable<json::object> w4(bench_context& b, bool redisson) {
  std::int64_t const tasks = env_number("W4_C", 16, 1, 10000);
  std::int64_t const permits = env_number("W4_PERMITS", 4, 1, 1'000'000);
  std::int64_t const m = env_number("W4_M", 2000, 1, many);
  std::string const name = "bench:w4:sem";
  resp::request reset;
  reset.push("DEL", name, "bench:w4:work");
  co_await command(b.admin, std::move(reset));
  auto const setter = b.c.new_owner();
  if (redisson) {
    co_await setter.semaphore(name).try_set_permits(permits, asio::use_awaitable);
  } else {
    co_await setter.permits(name).try_set_permits(permits, asio::use_awaitable);
  }
  std::int64_t claimed = 0, done = 0, in_flight = 0, most_in_flight = 0;
  bool stop = false;
  std::vector<double> waits;
  auto const counted_before = co_await command_stats(b.admin);
  auto const cpu_before = process_cpu_s();
  auto const t0 = clock_type::now();
  auto task = [&](int) -> asio::awaitable<void> {
    auto const me = b.c.new_owner();
    auto const sem = me.semaphore(name);
    auto const leased = me.permits(name);
    while (!stop && claimed < m) {
      ++claimed;
      auto const s = clock_type::now();
      std::optional<held> h;
      if (redisson) {
        co_await sem.acquire(1, asio::use_awaitable);
      } else if (b.watchdog) {
        h = co_await leased.acquire(1, asio::use_awaitable);
      } else {
        h = co_await leased.acquire(1, std::chrono::milliseconds{b.p.lease_ms}, asio::use_awaitable);
      }
      waits.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - s).count());
      most_in_flight = std::max(most_in_flight, ++in_flight);
      resp::request work;
      work.push("INCR", "bench:w4:work");
      co_await command(b.c, std::move(work));
      --in_flight;
      if (h) {
        co_await h->release(asio::use_awaitable);
      } else {
        co_await sem.release(1, asio::use_awaitable);
      }
      ++done;
    }
  };
  bool const capped = co_await run_tasks(tasks, b.p.cap_s, stop, task);
  double const elapsed = std::chrono::duration<double>(clock_type::now() - t0).count();
  double const cpu = process_cpu_s() - cpu_before;
  auto const after = co_await command_stats(b.admin);
  auto const d = delta(counted_before, after, done);
  co_return json::object{{"m", done},
                         {"target", m},
                         {"concurrency", tasks},
                         {"permits", permits},
                         {"semaphore", redisson ? "redisson" : "leased permits"},
                         {"capped", capped},
                         {"elapsed_s", r2(elapsed)},
                         {"ops_per_s", std::llround(double(done) / elapsed)},
                         {"wait_p50_ms", r2(percentile(waits, 50))},
                         {"wait_p99_ms", r2(percentile(waits, 99))},
                         {"max_in_flight", most_in_flight},
                         {"safety_ok", most_in_flight <= permits},
                         {"client_cpu_us_per_op", r2(cpu * 1e6 / double(std::max<std::int64_t>(done, 1)))},
                         {"cmds_per_op", d.per_op},
                         {"cmd_breakdown", d.breakdown}};
}

}  // namespace redisync::cli::bench
