#pragma once

// What the benchmarks compare against: redis-benchmark on the same private server, with the
// minimal lock step of shared/WORKLOADS.md ("Physical limit").

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace redisync::bench {

constexpr std::string_view lock_step =
    "redis.call('hincrby', KEYS[1], ARGV[1], 1); redis.call('pexpire', KEYS[1], ARGV[2]); return 1";

// Requests per second of `redis-benchmark -c 1 -P pipeline` running the script `sha` (lock_step).
inline double run_redis_benchmark(std::uint16_t port, std::string const& sha, int n, int pipeline) {
  auto const cmd = fmt::format(
      "redis-benchmark -h 127.0.0.1 -p {} -n {} -c 1 -P {} --csv evalsha {} 1 bench:limit:lock owner-1 30000",
      port, n, pipeline, sha);
  std::unique_ptr<FILE, int (*)(FILE*)> pipe{::popen(cmd.c_str(), "r"), ::pclose};
  if (!pipe) return 0;
  std::array<char, 512> line{};
  std::string last;
  while (std::fgets(line.data(), line.size(), pipe.get()) != nullptr) last = line.data();
  // "test","rps","avg_latency_ms",...  -> the second field of the last line
  auto const first = last.find("\",\"");
  if (first == std::string::npos) return 0;
  return std::stod(last.substr(first + 3));
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace redisync::bench
