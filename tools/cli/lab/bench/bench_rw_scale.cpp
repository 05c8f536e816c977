// S5 of WORKLOADS.md: the read-write lock with crowds. (a) S5_R readers of one lock acquire, then
// all release, and as many readers 10 to a lock: the client CPU of a release per read, which must
// not grow with the readers of a lock; (b) a writer holds while S5_WR readers and S5_WW writers
// queue, then releases: the drain and its cost per critical section. (Whether a write overlaps a
// hold is checked where the holds do work under the lock: W6 and `stress --kind read|write`.)

#include "cli/lab/bench/bench.hpp"

#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>

namespace redisync::cli::bench {

namespace {

using boost::system::error_code;

// `n` reads, `per_lock` to a lock, acquired together and then released together: the client CPU
// per release.
asio::awaitable<double> release_us_per_read(bench_context& b, std::string const& prefix, std::int64_t n,
                                            std::int64_t per_lock) {
  auto t = std::make_shared<hold_tally>();
  t->holds.reserve(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    b.c.new_owner().read_write_lock(prefix + std::to_string(i / per_lock)).read().acquire([t](error_code ec, held h) {
      ++t->answered;
      if (ec) {
        ++t->errors;
        return;
      }
      t->holds.push_back(std::move(h));
    });
  }
  co_await wait_until([&] { return t->answered >= n; }, std::chrono::seconds{600});
  auto const cpu0 = process_cpu_s();
  for (auto& h : t->holds) h.release([t](error_code) { ++t->released; });
  co_await wait_until([&] { return t->released >= t->holds.size(); }, std::chrono::seconds{600});
  co_return 1e6 * (process_cpu_s() - cpu0) / double(std::max<std::size_t>(t->holds.size(), 1));
}

}  // namespace

asio::awaitable<json::object> s5(bench_context& b) {
  auto const readers = b.p.s5_r;
  double const one_lock_us = co_await release_us_per_read(b, "bench:s5:crowd:", readers, readers);
  double const spread_us = co_await release_us_per_read(b, "bench:s5:spread:", readers, 10);

  // (b) A writer of another client holds; the crowd queues behind it in one process.
  std::string const name = "bench:s5:queue";
  client holder{co_await asio::this_coro::executor, b.c.cfg()};
  holder.start();
  auto writer = co_await holder.new_owner().read_write_lock(name).write().acquire(asio::use_awaitable);
  struct crowd {
    std::int64_t answered = 0;
    std::int64_t errors = 0;
    clock_type::time_point last{};
  };
  auto t = std::make_shared<crowd>();
  auto const wr = b.p.s5_wr, ww = b.p.s5_ww, n = wr + ww;
  // Writers spread among the readers, every (n / ww)-th.
  auto const every = ww > 0 ? std::max<std::int64_t>(n / ww, 1) : n + 1;
  for (std::int64_t i = 0, writers = 0; i < n; ++i) {
    bool const write = writers < ww && i % every == every - 1;
    writers += write ? 1 : 0;
    auto side = write ? b.c.new_owner().read_write_lock(name).write() : b.c.new_owner().read_write_lock(name).read();
    side.acquire([t](error_code ec, held h) {
      ++t->answered;
      t->last = clock_type::now();
      if (ec) {
        ++t->errors;
        return;
      }
      h.release(asio::detached);
    });
  }
  co_await wait_until([&] { return b.c.metrics().waiters + std::size_t(t->errors) >= std::size_t(n); }, std::chrono::seconds{600});
  co_await wait_until_scripts_settle(b.admin);
  auto const waiting0 = co_await server_totals_now(b.admin);
  co_await sleep_for(std::chrono::seconds{3});
  auto const waiting1 = co_await server_totals_now(b.admin);
  auto const cpu0 = process_cpu_s();
  auto const server0 = co_await server_totals_now(b.admin);
  auto const released = clock_type::now();
  co_await writer.release(asio::use_awaitable);
  bool const drained = co_await wait_until([&] { return t->answered >= n; }, std::chrono::seconds{600});
  double const drain_s = std::chrono::duration<double>(t->last - released).count();
  auto const cpu1 = process_cpu_s();
  auto const server1 = co_await server_totals_now(b.admin);
  holder.stop();
  co_await sleep_for(std::chrono::milliseconds{1500});
  auto const keys = co_await count_keys(b.admin);
  co_return json::object{
      {"capped", !drained},
      {"readers", readers},
      {"release_client_us_per_read", r2(one_lock_us)},
      {"release_client_us_per_read_spread", r2(spread_us)},
      {"queued_readers", wr},
      {"queued_writers", ww},
      {"errors", t->errors},
      {"drain_s", r2(drain_s)},
      {"client_us_per_cs", r2(1e6 * (cpu1 - cpu0) / double(n))},
      {"server_us_per_cs", r2(1e6 * (server1.cpu_s - server0.cpu_s) / double(n))},
      {"calls_per_s_while_waiting", r2(double(all_calls(waiting0.calls, waiting1.calls)) / 3.0)},
      {"keys_left", keys.live},
      {"keys_without_expiry", keys.without_expiry},
      {"safety_ok", t->errors == 0 && keys.without_expiry == 0}};
}

}  // namespace redisync::cli::bench
