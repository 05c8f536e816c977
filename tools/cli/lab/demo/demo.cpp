// redisync demo: a live scenario that shows what the locks promise and checks it.
//   1. workers contending on a few locks never overlap (a non-atomic counter stays exact);
//   2. nested calls with the same owner re-enter;
//   3. a holder whose process is killed loses the lock when its lease ends;
//   4. a holder paused past its lease is fenced off: its late write is rejected, and it learns
//      of the loss when it resumes;
//   5. a fair lock serves 5 processes in the order they queued, and passes over a killed waiter;
//   6. a read-write lock: reader processes share it, a writer process excludes them, and a writer
//      is not starved by readers that hold in overlapping turns;
//   7. leased permits: 3 permits, 6 processes, one killed while holding, its permit back within its
//      lease, never more than 3 holders (demo_permits.cpp);
//   8-10. a latch releasing 4 processes at once, multi-locks in opposite orders without deadlock,
//      a leader election whose killed leader is replaced within its lease (demo_coordination.cpp).
// Exits 0 only if every check held.

#include "cli/common/common.hpp"
#include "cli/lab/demo/demo_children.hpp"
#include "cli/lab/demo/demo_coordination.hpp"
#include "cli/lab/demo/demo_permits.hpp"
#include "cli/lab/demo/demo_report.hpp"
#include "cli/lab/demo/demo_faults.hpp"
#include "cli/lab/demo/demo_topology.hpp"
#include "cli/common/metrics_port.hpp"
#include "testbed/monotonic.hpp"

#include <redisync/redisync.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>

#include <sys/wait.h>
#include <unistd.h>

namespace redisync::cli {

namespace asio = boost::asio;
namespace json = boost::json;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

class demo_run {
 public:
  demo_run(asio::io_context& ctx, std::string url)
      : ctx_{ctx}, url_{std::move(url)}, client_{ctx.get_executor(), config_from_url(url_)} {
    std::random_device rd;
    prefix_ = fmt::format("redisync-demo:{:06x}:", rd() & 0xffffff);
    client_.start();
  }

  // The client whose locks the sections show.
  client const& user() const noexcept { return client_; }

  asio::awaitable<int> run() {
    say("using {} (lock names start with {})", url_, prefix_);
    co_await connect(client_);  // a server that refuses us ends the demo here, with the cause
    co_await contention();
    co_await reentrancy();
    co_await fault_sections(client_, report_, url_, prefix_);
    co_await fair_queue();
    co_await read_write();
    co_await leased_permits_section(client_, report_, url_, prefix_);
    co_await coordination_sections(client_, report_, url_, prefix_);
    client_.stop();
    co_return report_.summary();
  }

 private:
  template <class... Args>
  void say(fmt::format_string<Args...> f, Args&&... args) {
    report_.say(f, std::forward<Args>(args)...);
  }
  void record(std::string name, bool passed, std::string detail) {
    report_.record(std::move(name), passed, std::move(detail));
  }

  asio::awaitable<resp::value> cmd(resp::request req) { co_return co_await command(client_, std::move(req)); }

  asio::awaitable<void> sleep(std::chrono::milliseconds d) {
    asio::steady_timer t{ctx_, d};
    co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
  }

  // 1. Twelve workers, three locks, a read-modify-write counter per lock.
  asio::awaitable<void> contention() {
    constexpr int locks = 3, workers = 12, rounds = 40;
    say("1. {} workers contend on {} locks, {} critical sections each", workers, locks, rounds);
    int finished = 0, overlaps = 0;
    std::vector<int> inside(locks, 0);
    std::exception_ptr failure;
    asio::steady_timer all_done{ctx_, asio::steady_timer::time_point::max()};
    for (int w = 0; w < workers; ++w) {
      auto worker = [&, w]() -> asio::awaitable<void> {
        int const k = w % locks;
        auto lock = client_.new_owner().lock(prefix_ + "contended:" + std::to_string(k));
        for (int i = 0; i < rounds; ++i) {
          auto h = co_await lock.acquire(asio::use_awaitable);
          if (++inside[k] > 1) ++overlaps;
          resp::request get;
          get.push("GET", prefix_ + "counter:" + std::to_string(k));
          auto const n = number_in(co_await cmd(std::move(get)));
          co_await sleep(1ms);  // widen the window a race would need
          resp::request set;
          set.push("SET", prefix_ + "counter:" + std::to_string(k), n + 1);
          co_await cmd(std::move(set));
          --inside[k];
          co_await h.release(asio::use_awaitable);
        }
      };
      asio::co_spawn(ctx_, worker(), [&](std::exception_ptr e) {
        if (e && !failure) failure = e;
        if (++finished == workers) all_done.cancel();
      });
    }
    co_await all_done.async_wait(asio::as_tuple(asio::use_awaitable));
    if (failure) std::rethrow_exception(failure);
    bool exact = true;
    std::string counts;
    for (int k = 0; k < locks; ++k) {
      resp::request get;
      get.push("GET", prefix_ + "counter:" + std::to_string(k));
      std::int64_t n = 0;
      (co_await cmd(std::move(get))).as_integer(n);
      exact = exact && n == workers / locks * rounds;
      counts += fmt::format("{}{}", k ? "/" : "", n);
    }
    record("mutual exclusion under contention", exact && overlaps == 0,
           fmt::format("counters {} of {} each, {} overlaps, {} local hand-offs", counts,
                       workers / locks * rounds, overlaps, client_.metrics().handoffs));
    std::vector<std::string> counters;
    for (int k = 0; k < locks; ++k) counters.push_back(prefix_ + "counter:" + std::to_string(k));
    resp::request cleanup;
    cleanup.push_range("DEL", counters);
    co_await cmd(std::move(cleanup));
  }

  // 2. A nested call with the same owner re-enters.
  asio::awaitable<void> reentrancy() {
    say("2. an owner takes a lock, then a nested call takes it again");
    auto me = client_.new_owner();
    auto const name = prefix_ + "reentrant";
    auto outer = co_await me.lock(name).acquire(asio::use_awaitable);
    auto nested = [&](owner const& who) -> asio::awaitable<std::pair<std::int64_t, std::uint64_t>> {
      auto inner = co_await who.lock(name).acquire(asio::use_awaitable);
      auto const count = co_await who.lock(name).hold_count(asio::use_awaitable);
      co_await inner.release(asio::use_awaitable);
      co_return std::pair{count, inner.token()};
    };
    auto [count, inner_token] = co_await nested(me);
    auto stranger = co_await client_.new_owner().lock(name).try_acquire(0ms, asio::use_awaitable);
    co_await outer.release(asio::use_awaitable);
    bool const free_after = !(co_await me.lock(name).is_locked(asio::use_awaitable));
    record("reentrant nesting", count == 2 && inner_token == outer.token() && !stranger && free_after,
           fmt::format("hold count {} inside, same token {}, other owner refused, free after", count,
                       outer.token()));
  }

  // Starts `redisync stress` as a separate process; its summary goes to `out`.
  pid_t spawn_stress(std::vector<std::string> args, std::filesystem::path const& out) {
    return cli::spawn_stress(url_, std::move(args), out);
  }

  // Polls the server until `done` holds or 10 s have passed.
  template <class Condition>
  asio::awaitable<bool> poll(Condition done) {
    co_return co_await poll_until(std::move(done), 10s, 5ms);
  }

  asio::awaitable<std::int64_t> queued(std::string const& name) {
    resp::request req;
    req.push("ZCARD", "redisync_fair_queue:{" + name + "}");
    co_return (co_await cmd(std::move(req))).integer();
  }

  // The CLOCK_MONOTONIC time of the first `event` in a stress history, or -1.
  static std::int64_t first_event(std::filesystem::path const& history, std::string_view event) {
    std::ifstream in{history};
    for (std::string line; std::getline(in, line);) {
      try {
        auto const e = json::parse(line).as_object();
        if (e.at("event").as_string() == event) return e.at("t_ns").as_int64();
      } catch (std::exception const&) {
      }
    }
    return -1;
  }

  // Starts `count` fair-lock processes on `name`, each once the one before it has its place.
  asio::awaitable<std::vector<pid_t>> queue_processes(std::string const& name, int count, std::string const& tag,
                                                      std::vector<std::filesystem::path>& histories) {
    std::vector<pid_t> pids;
    auto const dir = std::filesystem::temp_directory_path();
    for (int i = 0; i < count; ++i) {
      histories.push_back(dir / fmt::format("redisync-demo-{}-{}{}.history", ::getpid(), tag, i));
      std::filesystem::remove(histories.back());
      pids.push_back(spawn_stress({"--lock", name, "--kind", "fair", "--iterations", "1", "--hold-ms", "50",
                                   "--history", histories.back().string()},
                                  "/dev/null"));
      auto const placed = [&]() -> asio::awaitable<bool> { co_return co_await queued(name) == i + 1; };
      if (!co_await poll(placed)) break;
    }
    co_return pids;
  }

  // 5. Five processes queue on a fair lock in a known order and are served in that order; then a
  //    queued process is killed and the queue moves on within 2 s.
  asio::awaitable<void> fair_queue() {
    auto const name = prefix_ + "fair";
    say("5. this process holds the fair lock {}; 5 processes queue for it, one after the other", name);
    auto me = client_.new_owner();
    std::vector<std::filesystem::path> histories;
    auto held_now = co_await me.fair_lock(name).acquire(asio::use_awaitable);
    auto const pids = co_await queue_processes(name, 5, "p", histories);
    co_await held_now.release(asio::use_awaitable);
    for (auto pid : pids) ::waitpid(pid, nullptr, 0);
    std::vector<std::pair<std::int64_t, int>> served;
    for (int i = 0; i < static_cast<int>(histories.size()); ++i) {
      served.emplace_back(first_event(histories[i], "acquired"), i);
    }
    std::sort(served.begin(), served.end());
    std::string order;
    bool in_order = served.size() == 5;
    for (std::size_t i = 0; i < served.size(); ++i) {
      order += fmt::format("{}p{}", i ? " " : "", served[i].second);
      in_order = in_order && served[i].first > 0 && served[i].second == static_cast<int>(i);
    }
    record("a fair lock serves in queue order", in_order, fmt::format("queued p0..p4, served {}", order));

    say("   again with 3 processes; the first in line is killed (SIGKILL) while it waits");
    std::vector<std::filesystem::path> second;
    held_now = co_await me.fair_lock(name).acquire(asio::use_awaitable);
    auto const waiting = co_await queue_processes(name, 3, "q", second);
    if (!waiting.empty()) {
      ::kill(waiting[0], SIGKILL);
      ::waitpid(waiting[0], nullptr, 0);
    }
    auto const released_ns = process::monotonic_ns();
    co_await held_now.release(asio::use_awaitable);
    for (std::size_t i = 1; i < waiting.size(); ++i) ::waitpid(waiting[i], nullptr, 0);
    auto const next_ns = second.size() == 3 ? first_event(second[1], "acquired") : -1;
    auto const last_ns = second.size() == 3 ? first_event(second[2], "acquired") : -1;
    auto const moved_on_ms = (next_ns - released_ns) / 1'000'000;
    say("   the next process held the lock {} ms after the release", moved_on_ms);
    bool const moved_on = waiting.size() == 3 && next_ns > 0 && last_ns > next_ns && moved_on_ms <= 2000;
    record("a fair queue passes over a killed waiter", moved_on,
           fmt::format("the next waiter held it {} ms after the release", moved_on_ms));
    for (auto const& h : histories) std::filesystem::remove(h);
    for (auto const& h : second) std::filesystem::remove(h);
    resp::request cleanup;
    cleanup.push("DEL", name + ":counter");
    co_await cmd(std::move(cleanup));
  }

  // 6. Three reader processes and one writer process on one read-write lock; then 8 readers of this
  //    process in overlapping turns, and a writer that must get in within two read holds.
  asio::awaitable<void> read_write() {
    auto const name = prefix_ + "rw";
    say("6. 3 reader processes and 1 writer process share the read-write lock {}", name);
    auto const dir = std::filesystem::temp_directory_path();
    std::vector<std::pair<pid_t, std::filesystem::path>> children;
    for (int i = 0; i < 4; ++i) {
      bool const reads = i < 3;
      auto out = dir / fmt::format("redisync-demo-{}-rw{}.out", ::getpid(), i);
      auto const pid = spawn_stress({"--lock", name, "--kind", reads ? "read" : "write", "--workers", "3",
                                     "--iterations", reads ? "20" : "10", "--hold-ms", reads ? "20" : "5"},
                                    out);
      children.emplace_back(pid, std::move(out));
    }
    std::int64_t max_readers = 0, overlaps = 0, changed = 0, writes = 0;
    bool all_done = true;
    for (auto const& [pid, out] : children) {
      auto const summary = stress_summary(pid, out);
      if (!summary) {
        all_done = false;
        continue;
      }
      max_readers = std::max(max_readers, summary->at("max_concurrent_readers").as_int64());
      overlaps += summary->at("overlaps").as_int64();
      changed += summary->at("changed_under_read").as_int64();
      if (summary->at("kind").as_string() == "write") writes += summary->at("acquired").as_int64();
    }
    resp::request get;
    get.push("GET", name + ":counter");
    auto const counter = co_await cmd(std::move(get));
    record("readers of several processes share", all_done && max_readers > 1,
           fmt::format("up to {} readers held at once", max_readers));
    record("a write overlaps no other hold", all_done && overlaps == 0 && changed == 0 &&
                                                 counter.text() == std::to_string(writes),
           fmt::format("{} overlaps, {} reads saw a change, counter {} after {} writes", overlaps, changed,
                       counter.text(), writes));

    constexpr auto hold = 200ms;
    say("   8 readers of this process hold it in overlapping turns of {} ms; then a writer asks", hold.count());
    bool stop = false;
    int readers_left = 8;
    auto reader = [&](std::chrono::milliseconds offset) -> asio::awaitable<void> {
      auto side = client_.new_owner().read_write_lock(name).read();
      co_await sleep(offset);
      while (!stop) {
        auto h = co_await side.acquire(asio::use_awaitable);
        co_await sleep(hold);
        co_await h.release(asio::use_awaitable);
      }
      --readers_left;
    };
    for (int i = 0; i < 8; ++i) asio::co_spawn(ctx_, reader(hold * i / 8), asio::detached);
    co_await sleep(2 * hold);
    auto writer = client_.new_owner().read_write_lock(name).write();
    auto const asked = clock_type::now();
    auto w = co_await writer.try_acquire(10 * hold, asio::use_awaitable);
    auto const waited = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - asked);
    if (w) co_await w->release(asio::use_awaitable);
    stop = true;
    auto const readers_done = [&]() -> asio::awaitable<bool> { co_return readers_left == 0; };
    co_await poll(readers_done);
    record("a writer is not starved by readers", w.has_value() && waited < 2 * hold,
           fmt::format("it held the lock {} ms after asking (readers hold {} ms)", waited.count(), hold.count()));
    resp::request cleanup;
    cleanup.push("DEL", name + ":counter", name + ":readers", name + ":writers");
    co_await cmd(std::move(cleanup));
  }

  asio::io_context& ctx_;
  std::string url_;
  client client_;
  demo_report report_;
  std::string prefix_;
};

}  // namespace

int demo_main(std::vector<std::string> const& args) {
  std::optional<std::string> url;
  po::options_description options{"demo options"};
  options.add_options()("redis", po::value<std::string>(),
                        "Redis URL; without it a private redis-server is started on a free port")(
      "cluster", "start a private 3-master, 3-replica Redis Cluster and show locks through its failover")(
      "sentinel", "start a private master, replica and 3 Sentinels and show locks through their failover");
  add_metrics_options(options);
  po::variables_map vm;
  int code = 0;
  if (!parse("demo", "A live demonstration of the locks, with a summary of the safety checks.", options, {},
             args, vm, code)) {
    return code;
  }
  if (vm.count("cluster") + vm.count("sentinel") + vm.count("redis") > 1) {
    std::cerr << "redisync demo: --redis, --cluster and --sentinel exclude each other\n";
    return 2;
  }
  auto const metrics = metrics_options_from(vm);
  if (metrics.port && (vm.count("cluster") || vm.count("sentinel"))) {
    throw usage_error{"--metrics-port is for the demo on one server, not --cluster or --sentinel"};
  }
  if (vm.count("cluster")) return demo_cluster();
  if (vm.count("sentinel")) return demo_sentinel();
  if (vm.count("redis")) url = vm["redis"].as<std::string>();
  auto target = open_target(url);
  if (target.own) {
    fmt::print("started a private redis-server (pid {}) on 127.0.0.1:{}\n", target.own->pid(),
               target.own->port());
  }
  asio::io_context ctx{1};
  demo_run demo{ctx, target.url};
  metrics_port const serving{demo.user(), metrics};
  int const result = run(ctx, demo.run());
  if (target.own) fmt::print("stopping the private redis-server (pid {})\n", target.own->pid());
  return result;
}

}  // namespace redisync::cli
