#pragma once

// A fault under load: three `redisync stress` processes of two workers each on one lock, with a
// fenced counter, while a fault is injected. From their histories (history_check): no crash, every
// process done within its bound, every hold ended released or lost, no two holds valid at once,
// fencing tokens strictly increasing, the counter exact (unless the fault erased the lock and the
// counter); and no lock left behind without an expiry within its lease.

#include "process/redis_server.hpp"
#include "support/processes.hpp"
#include "support/stress_process.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string>

namespace redisync::test {

// The watchdog lease of the stress processes: short, so that faults outlast it.
inline constexpr std::chrono::milliseconds fault_lease{600};

struct fault_scenario {
  std::string lock;
  std::string url;               // where the stress processes connect
  std::function<void()> inject;  // the fault, returning when it is over
  bool erases_data = false;      // the lock and the counter go with the fault: neither is checked
  int processes = 3;
  // Writes acknowledged by a demoted master that was still writable are gone (a Sentinel failover:
  // replication is asynchronous): holds and tokens are checked, the counter's gap only reported.
  bool loses_late_writes = false;
};

// One command to the server that has the lock's keys once the fault is over (after a failover,
// another than before).
using lock_server = std::function<resp::value(std::vector<std::string> const&)>;

// Runs the stress processes (three by default), injects the fault once each has held the lock, and checks
// everything the tier promises.
inline void run_with_fault(lock_server const& redis, fault_scenario const& s) {
  using namespace std::chrono_literals;
  temp_dir dir;
  std::vector<std::string> const args{
      "--lock", s.lock, "--workers", "2", "--iterations", "20", "--hold-ms", "10", "--retry-ms", "50",
      "--watchdog-ms", std::to_string(fault_lease.count()), "--counter", s.lock + ":counter",
      "--fence-key", s.lock + ":fence"};
  auto group = start_stress(s.url, args, dir.path, s.processes);
  // Every process is connected and has held the lock before the fault: a process that meets the
  // fault before its first connection ends at once, as the tool does.
  auto const all_granted = [&] {
    for (auto const& p : group) {
      if (p->events("acquired").empty()) return false;
    }
    return true;
  };
  BOOST_TEST_REQUIRE(poll_until(all_granted, 20s));
  s.inject();
  wait_for_group(group, 60s);
  std::optional<std::int64_t> counter;
  if (!s.erases_data) {
    std::int64_t value = 0;
    if (auto const v = redis({"GET", s.lock + ":counter"}); !v.is_null()) v.as_integer(value);
    counter = value;
  }
  auto const out = check_stress_group(
      group, {.counter = s.loses_late_writes ? std::nullopt : counter, .windows = !s.erases_data});
  if (s.loses_late_writes && counter) {
    BOOST_TEST_MESSAGE(s.lock << ": " << out.accepted - *counter << " accepted writes lost with the old master");
  }
  BOOST_TEST_MESSAGE(s.lock << ": " << out.acquired << " holds (" << out.released << " released, "
                            << out.lost << " lost), " << out.accepted << " writes accepted, "
                            << out.rejected << " rejected, " << out.errors << " errors");
  BOOST_TEST(out.acquired > 0);
  // Whatever is left of the lock expires within its lease.
  auto const pttl = redis({"PTTL", s.lock}).integer();
  BOOST_TEST((pttl == -2 || (pttl > 0 && pttl <= fault_lease.count())), "PTTL " << pttl);
}

inline void run_with_fault(process::redis_server const& redis, fault_scenario const& s) {
  run_with_fault([&redis](std::vector<std::string> const& args) { return redis.command(args); }, s);
}

}  // namespace redisync::test
