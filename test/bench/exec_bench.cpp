// Pipelined EVALSHA throughput of one connection shared by 64 coroutines, next to redis-benchmark
// with the same script, pipeline 16, on the same private server. Prints one JSON line.
//   exec_bench [--rounds R] [--n N] [--coroutines C]
// With --coroutines 1 it measures one request at a time against redis-benchmark -P 1: the
// connection's own cost per round trip.

#include "io/connection.hpp"

#include "testbed/redis_server.hpp"
#include "redis_benchmark.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/core.h>
#include <fmt/format.h>

#include <chrono>
#include <string>
#include <vector>

namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;

namespace {

using redisync::bench::lock_step;
using redisync::bench::median;
using redisync::bench::run_redis_benchmark;

double run_ours(std::string const& url, std::string const& sha, int n, int coroutines,
                redisync::detail::io::connection_stats& stats) {
  asio::io_context ctx{1};
  auto cfg = redisync::config::from_url(url);
  redisync::detail::io::connection conn{ctx.get_executor(), cfg};
  conn.run(asio::detached);
  int remaining = n;
  int running = coroutines;
  clock_type::time_point start, end;
  auto worker = [&]() -> asio::awaitable<void> {
    while (remaining > 0) {
      --remaining;
      redisync::resp::request req;
      req.push("EVALSHA", sha, 1, "bench:limit:lock", "owner-1", 30000);
      co_await conn.exec(std::move(req), asio::use_awaitable);
    }
    if (--running == 0) {
      end = clock_type::now();
      conn.stop();
    }
  };
  auto start_all = [&]() -> asio::awaitable<void> {
    redisync::resp::request ping;
    ping.push("PING");
    co_await conn.exec(std::move(ping), asio::use_awaitable);
    start = clock_type::now();
    for (int i = 0; i < coroutines; ++i) asio::co_spawn(ctx, worker(), asio::detached);
  };
  asio::co_spawn(ctx, start_all(), asio::detached);
  ctx.run();
  stats = conn.stats();
  return n / std::chrono::duration<double>(end - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 3;
  int n = 400000;
  int coroutines = 64;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string_view const flag = argv[i];
    if (flag == "--rounds") rounds = std::stoi(argv[i + 1]);
    if (flag == "--n") n = std::stoi(argv[i + 1]);
    if (flag == "--coroutines") coroutines = std::stoi(argv[i + 1]);
  }
  // One coroutine is compared with one request at a time, many with pipeline 16.
  int const pipeline = coroutines == 1 ? 1 : 16;
  redisync::process::redis_server redis;
  std::string const sha{redis.command({"SCRIPT", "LOAD", lock_step}).text()};
  std::vector<double> ours, theirs;
  redisync::detail::io::connection_stats stats;
  // Interleaved rounds so that a noisy moment hurts both sides alike.
  for (int r = 0; r < rounds; ++r) {
    ours.push_back(run_ours(redis.url(), sha, n, coroutines, stats));
    theirs.push_back(run_redis_benchmark(redis.port(), sha, n, pipeline));
  }
  double const ours_rps = median(ours);
  double const theirs_rps = median(theirs);
  fmt::print(
      "{{\"bench\":\"pipelined_evalsha\",\"coroutines\":{},\"connections\":1,\"n\":{},\"rounds\":{},"
      "\"redisync_ops_per_s\":{:.0f},\"redis_benchmark_c1_P{}_rps\":{:.0f},\"ratio\":{:.3f},"
      "\"requests_per_write\":{:.1f},\"all_redisync_ops_per_s\":[{:.0f}],\"all_redis_benchmark_rps\":[{:.0f}]}}\n",
      coroutines, n, rounds, ours_rps, pipeline, theirs_rps, theirs_rps > 0 ? ours_rps / theirs_rps : 0.0,
      stats.writes ? double(stats.requests_written) / double(stats.writes) : 0.0,
      fmt::join(ours, ","), fmt::join(theirs, ","));
  return 0;
}
