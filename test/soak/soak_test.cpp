// Soak: random faults for 10 minutes (SOAK_SECONDS) under 4 `redisync stress` processes on one
// lock with a fenced counter. Redis is killed (and restarted from its append-only file, which
// fsyncs every write, so nothing acknowledged is lost), paused, and restarted; the network between
// clients and Redis gets the fault proxy's faults; client processes are killed. A process that ends
// (finished, killed, or unable to connect during an outage) is replaced at once. Afterwards every
// history passes history_check (no two holds valid at once, tokens increasing, every hold ended
// once, the counter exact) and a report of operations done and faults injected is printed (and
// written to SOAK_REPORT, which scripts/test.sh shows). SOAK_SEED replays a run's choice of faults.

#include "testbed/redis_server.hpp"
#include "support/fault_proxy.hpp"
#include "support/processes.hpp"
#include "support/stress_process.hpp"

#include <boost/test/unit_test.hpp>
#include <fmt/core.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <thread>

using namespace std::chrono_literals;
using redisync::process::redis_server;
using redisync::test::fault_proxy;
using redisync::test::history_check;
using redisync::test::monotonic_ns;
using redisync::test::stress_process;

namespace {

constexpr auto lease = 600ms;  // short, so that faults outlast it

std::int64_t env_or(char const* name, std::int64_t fallback) {
  char const* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::stoll(v) : fallback;
}

class soak {
 public:
  explicit soak(std::uint64_t seed) : rng_{seed} {}

  // Faults with quiet gaps between them until `length` has passed; then the last processes finish.
  void run(std::chrono::seconds length) {
    for (int i = 0; i < processes; ++i) start_process();
    auto const end = std::chrono::steady_clock::now() + length;
    while (std::chrono::steady_clock::now() < end) {
      pass(pick(1000ms, 4000ms));  // quiet: the processes make progress
      inject();
    }
    proxy_.clear();
    for (auto& p : running_) {
      BOOST_TEST_REQUIRE(p->wait(180s), "a stress process did not finish within 3 minutes of the last fault");
      retire(std::move(p), {});
    }
    running_.clear();
  }

  // The checks, and the report.
  std::string check_and_report(std::chrono::seconds length) {
    std::int64_t counter = 0;
    if (auto const v = redis_.command({"GET", "soak:counter"}); !v.is_null()) v.as_integer(counter);
    auto const out = check_.check({.counter = counter});
    BOOST_TEST(out.acquired > 0);
    // Whatever is left of the lock expires within its lease.
    auto const pttl = redis_.command({"PTTL", "soak"}).integer();
    BOOST_TEST((pttl == -2 || (pttl > 0 && pttl <= lease.count())), "PTTL " << pttl);

    std::string faults;
    int total = 0;
    for (auto const& [kind, n] : faults_) {
      faults += fmt::format("{}{} {}", faults.empty() ? "" : ", ", kind, n);
      total += n;
    }
    return fmt::format(
        "soak: {} s, {} holds ({} released, {} lost), {} fenced writes accepted, {} rejected, {} unknown, "
        "{} errors, counter {}; {} processes ({} killed, {} found no Redis at start); {} faults: {}\n",
        length.count(), out.acquired, out.released, out.lost, out.accepted, out.rejected, out.unknown,
        out.errors, counter, started_, check_.killed(), unconnected_, total, faults);
  }

 private:
  static constexpr int processes = 4;

  std::chrono::milliseconds pick(std::chrono::milliseconds lo, std::chrono::milliseconds hi) {
    return std::chrono::milliseconds{std::uniform_int_distribution<std::int64_t>{lo.count(), hi.count()}(rng_)};
  }

  void start_process() {
    std::vector<std::string> const args{
        "--lock", "soak", "--workers", "2", "--iterations", "200", "--hold-ms", "5", "--retry-ms", "50",
        "--watchdog-ms", std::to_string(lease.count()), "--counter", "soak:counter", "--fence-key", "soak:fence"};
    running_.push_back(std::make_unique<stress_process>(proxy_.url(), args, dir_.path,
                                                        fmt::format("p{}", started_++)));
  }

  // A process that has ended goes to the checker.
  void retire(std::unique_ptr<stress_process> p, std::optional<std::int64_t> killed_at) {
    if (!killed_at) BOOST_TEST((p->exit_code() == 0 || p->exit_code() == 1), "exit code " << p->exit_code());
    auto const history = p->history();
    check_.add(history, killed_at);
    if (!killed_at && p->has_summary()) {
      check_.add_summary(p->summary());
    } else if (!killed_at) {
      // The tool ends at once when its first connection fails: an outage at its start.
      BOOST_TEST(history.empty(), "a process with a history ended without its summary");
      ++unconnected_;
    }
  }

  // Lets `d` pass, replacing the processes that end meanwhile.
  void pass(std::chrono::milliseconds d) {
    auto const until = std::chrono::steady_clock::now() + d;
    do {
      for (auto& p : running_) {
        if (p->wait(0ms)) {
          retire(std::move(p), {});
        }
      }
      std::erase(running_, nullptr);
      while (running_.size() < processes) start_process();
      std::this_thread::sleep_for(50ms);
    } while (std::chrono::steady_clock::now() < until);
  }

  void proxy_fault(fault_proxy::faults f, std::chrono::milliseconds d) {
    proxy_.set(f);
    pass(d);
    proxy_.clear();
  }

  void inject() {
    auto const d = pick(300ms, 3000ms);
    std::map<std::string, std::function<void()>> const kinds{
        {"redis killed", [&] { redis_.kill_hard(); pass(d); redis_.start(); }},
        {"redis paused", [&] { redis_.send_signal(SIGSTOP); pass(d); redis_.send_signal(SIGCONT); }},
        {"redis restarted", [&] { redis_.stop(); redis_.start(); }},
        {"latency", [&] { proxy_fault({.latency = pick(1ms, 50ms)}, d); }},
        {"blackhole", [&] { proxy_fault({.stalled = fault_proxy::both}, d); }},
        {"replies held back", [&] { proxy_fault({.stalled = fault_proxy::to_client}, d); }},
        {"connections reset", [&] { proxy_.reset_all(); }},
        {"connections cut", [&] {
           proxy_fault({.cut_after = pick(100ms, 2000ms).count()}, d);
           proxy_.reset_all();  // connections made during the fault still carry their limit
         }},
        {"trickle", [&] { proxy_fault({.trickle = 16}, d); }},
        {"connections refused", [&] {
           proxy_.set({.refuse = true});
           proxy_.reset_all();
           pass(d);
           proxy_.clear();
         }},
        {"client killed", [&] {
           auto& victim = running_[std::uniform_int_distribution<std::size_t>{0, running_.size() - 1}(rng_)];
           victim->kill_hard();
           retire(std::move(victim), monotonic_ns());
           std::erase(running_, nullptr);
           start_process();
         }},
    };
    auto it = kinds.begin();
    std::advance(it, std::uniform_int_distribution<std::size_t>{0, kinds.size() - 1}(rng_));
    ++faults_[it->first];
    it->second();
  }

  redis_server redis_{redisync::process::with_args({"--appendonly", "yes", "--appendfsync", "always"})};
  fault_proxy proxy_{redis_.port()};
  redisync::test::temp_dir dir_;
  std::mt19937_64 rng_;
  std::vector<std::unique_ptr<stress_process>> running_;
  history_check check_;
  std::map<std::string, int> faults_;
  int started_ = 0, unconnected_ = 0;
};

}  // namespace

BOOST_AUTO_TEST_CASE(ten_minutes_of_random_faults_keep_every_hold_exclusive_and_the_counter_exact) {
  auto const length = std::chrono::seconds{env_or("SOAK_SECONDS", 600)};
  auto const seed = static_cast<std::uint64_t>(env_or("SOAK_SEED", std::random_device{}()));
  BOOST_TEST_MESSAGE("soak seed " << seed << " (SOAK_SEED replays it)");
  soak run{seed};
  run.run(length);
  auto const report = fmt::format("{}seed {}\n", run.check_and_report(length), seed);
  std::cout << report;
  if (char const* path = std::getenv("SOAK_REPORT")) std::ofstream{path} << report;
}
