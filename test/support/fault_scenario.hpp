#pragma once

// A fault under load: three `redisync stress` processes of two workers each on one name while a
// fault is injected (run_through_fault), then checks from what they left. On a lock, with a fenced
// counter (run_with_fault, history_check): no crash, every process done within its bound, every
// hold ended released or lost, no two holds valid at once, fencing tokens strictly increasing, the
// counter exact (unless the fault erased the lock and the counter); and no lock left behind without
// an expiry within its lease. Leased permits make their own checks on the same run
// (test/fault/permits_server_fault_test.cpp).

#include "testbed/redis_server.hpp"
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

// A server fault lasts this long: longer than the lease, so that holds are lost and renewals,
// releases and hand-offs all meet it.
inline constexpr std::chrono::milliseconds fault_time{1500};

inline std::string role(process::redis_server const& redis) {
  return std::string{redis.command({"ROLE"}).elements()[0].text()};
}

inline bool linked(process::redis_server const& replica) {
  return replica.command({"INFO", "replication"}).text().find("master_link_status:up") != std::string_view::npos;
}

// A managed failover from `master` to its replica `to`: the master waits until the replica has
// every write, then they swap roles.
inline void failover(process::redis_server const& master, process::redis_server const& to) {
  using namespace std::chrono_literals;
  auto const reply = master.command({"FAILOVER"});
  BOOST_TEST_REQUIRE(!reply.is_error(), reply.text());
  BOOST_TEST_REQUIRE(poll_until([&] { return role(to) == "master" && role(master) == "slave" && linked(master); },
                                10s));
}

struct fault_scenario {
  std::string lock;
  std::string url;               // where the stress processes connect
  std::function<void()> inject;  // the fault, returning when it is over
  bool erases_data = false;      // the lock and the counter go with the fault: neither is checked
  int processes = 3;
  // Writes acknowledged by a demoted master that was still writable are gone (a Sentinel failover:
  // replication is asynchronous): holds and tokens are checked, the counter's gap only reported.
  bool loses_late_writes = false;
  // Two masters take writes for a while (a Sentinel's old master stays writable until it is
  // reconfigured, some 10 s; a stopped cluster master, resumed, runs what was queued for it before
  // it hears of its successor): holds taken on it overlap holds on the new one, outside the promise
  // (deployment.md), and a grant of one can reach its owner after a later, higher one of the
  // other. Both are reported, not failed; the counter check stands.
  bool two_masters_for_a_while = false;
  // Liveness: from the moment `settled_at` (CLOCK_MONOTONIC ns, set by `inject`: once the topology
  // took its new shape, or when a change that must not interrupt the lock began; else when
  // `inject` returned) the lock is never free for longer than this before someone holds it again. With it, the processes hold for longer, under a lease long
  // enough that a lock left held by no one would show.
  std::optional<std::chrono::milliseconds> available_within{};
  std::int64_t const* settled_at = nullptr;
  int iterations = 20;  // holds per worker: enough to outlast the fault
  // What the processes hold (`stress --kind ...`; a reentrant lock without), one at a time.
  std::vector<std::string> kind_args{};
  // Leased permits (one of them): counted with INCR, not fenced writes, so their counter is not
  // checked; the name's key is their definition, which does not expire.
  bool leased_permits = false;
};

// The lease of a liveness scenario: a lock left held by no one would stay so for seconds.
inline constexpr std::chrono::milliseconds liveness_lease{10000};

// One command to the server that has the lock's keys once the fault is over (after a failover,
// another than before).
using lock_server = std::function<resp::value(std::vector<std::string> const&)>;

// The load every fault test puts on `name`: two workers per process of twenty holds of 10 ms each,
// a pause before trying again after an error (so that every process ends with all its holds, and a
// fault longer than the lease meets them all), and the short lease. `kind_args` say what is held.
inline std::vector<std::string> fault_load(std::string const& name, std::vector<std::string> const& kind_args,
                                           std::chrono::milliseconds lease = fault_lease, int iterations = 20) {
  std::vector<std::string> args{"--lock",     name, "--workers",     "2", "--iterations", std::to_string(iterations),
                                "--hold-ms",  "10", "--retry-ms",    "50",
                                "--watchdog-ms", std::to_string(lease.count())};
  args.insert(args.end(), kind_args.begin(), kind_args.end());
  return args;
}

// The stress processes of a fault test.
struct fault_load_run {
  std::string url;
  std::vector<std::string> args;
  int processes = 3;
  // The history line that shows a process at work: once each has logged it, the fault begins. Each
  // must be connected by then (one that meets the fault before its first connection ends at once,
  // as the tool does): its first "wait" comes after its connection, its first "acquired" only once
  // the others let it in.
  std::string under_way = "acquired";
};

// Runs the stress processes, injects the fault once each is under way, waits until every one has
// exited within the bound, then hands the group to `check`. The fault is given the group: one may
// wait for what the processes log.
inline void run_through_fault(fault_load_run const& run, std::function<void(stress_group const&)> const& inject,
                              std::function<void(stress_group const&)> const& check) {
  using namespace std::chrono_literals;
  temp_dir dir;
  auto group = start_stress(run.url, run.args, dir.path, run.processes);
  auto const all_under_way = [&] {
    for (auto const& p : group) {
      if (p->events(run.under_way).empty()) return false;
    }
    return true;
  };
  BOOST_TEST_REQUIRE(poll_until(all_under_way, 20s));
  inject(group);
  wait_for_group(group, 60s);
  check(group);
}

// Runs the stress processes (three by default) on a lock, injects the fault once each has held the
// lock, and checks everything the tier promises.
inline void run_with_fault(lock_server const& redis, fault_scenario const& s) {
  auto const lease = s.available_within ? liveness_lease : fault_lease;
  std::vector<std::string> load{"--counter", s.lock + ":counter"};
  if (!s.leased_permits) load.insert(load.end(), {"--fence-key", s.lock + ":fence"});
  load.insert(load.end(), s.kind_args.begin(), s.kind_args.end());
  auto const args = fault_load(s.lock, load, lease, s.iterations);
  std::int64_t settled = 0;
  auto const inject = [&](stress_group const&) {
    s.inject();
    settled = s.settled_at != nullptr ? *s.settled_at : monotonic_ns();
  };
  // A plain lock is not fair across processes: one that holds it hands it on to its own workers,
  // and the others may wait until it is done. With a long load, each process need only have begun.
  fault_load_run const run{s.url, args, s.processes, s.available_within ? "wait" : "acquired"};
  run_through_fault(run, inject, [&](stress_group const& group) {
    if (s.available_within) {
      auto const longest = longest_wait_for_a_grant_after({&group}, settled);
      BOOST_TEST_REQUIRE(longest.has_value(), "no hold was granted after the fault");
      BOOST_TEST_MESSAGE(s.lock << ": free at most " << longest->count() << " ms at a time once the topology settled");
      BOOST_TEST((*longest <= *s.available_within), s.lock << ": free for " << longest->count()
                                                           << " ms with nobody holding it, past the bound of "
                                                           << s.available_within->count() << " ms");
    }
    std::optional<std::int64_t> counter;
    if (!s.erases_data && !s.leased_permits) {
      std::int64_t value = 0;
      if (auto const v = redis({"GET", s.lock + ":counter"}); !v.is_null()) v.as_integer(value);
      counter = value;
    }
    auto const out = check_stress_group(
        group, {.counter = s.loses_late_writes ? std::nullopt : counter,
                .windows = !s.erases_data && !s.two_masters_for_a_while});
    if (s.loses_late_writes && counter && out.accepted >= *counter) {
      BOOST_TEST_MESSAGE(s.lock << ": " << out.accepted - *counter << " accepted writes lost with the old master");
    }
    BOOST_TEST_MESSAGE(s.lock << ": " << out.acquired << " holds (" << out.released << " released, "
                              << out.lost << " lost), " << out.accepted << " writes accepted, "
                              << out.rejected << " rejected, " << out.errors << " errors");
    BOOST_TEST(out.acquired > 0);
    // Whatever is left of the lock expires within its lease.
    if (s.leased_permits) return;
    auto const pttl = redis({"PTTL", s.lock}).integer();
    BOOST_TEST((pttl == -2 || (pttl > 0 && pttl <= lease.count())), "PTTL " << pttl);
  });
}

inline void run_with_fault(process::redis_server const& redis, fault_scenario const& s) {
  run_with_fault([&redis](std::vector<std::string> const& args) { return redis.command(args); }, s);
}

}  // namespace redisync::test
