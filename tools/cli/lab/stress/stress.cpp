// redisync stress: workers in this process (one owner each) take one lock, read a counter, hold,
// write counter + 1 and release. Several processes on the same lock and counter must end with the
// counter equal to the sum of their acquisitions. With a read-write lock, readers instead check that
// the counter does not change while they hold, and every hold puts its validity window where all
// processes see it (`<lock>:readers`, `<lock>:writers`), so that any process sees a write that
// overlaps another hold. A semaphore's workers count its holders the same way (stress_permits.cpp).
// Prints one JSON summary line.

#include "cli/common/json_text.hpp"
#include "cli/lab/stress/hold_windows.hpp"
#include "cli/lab/stress/stress.hpp"

#include <redisync/redisync.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <array>

namespace redisync::cli {

namespace asio = boost::asio;
namespace json = boost::json;
using boost::system::error_code;

asio::awaitable<bool> acquire_failed(stress_options const& o, totals& t, history_log& log, error_report& report,
                                    std::string_view owner, error_code ec) {
  ++t.errors;
  report.add("acquire", ec);
  log.write("error", owner, 0, {{"detail", ec.message()}});
  if (o.retry_ms <= 0) co_return false;
  asio::steady_timer pause{co_await asio::this_coro::executor, std::chrono::milliseconds{o.retry_ms}};
  co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
  co_return true;
}

namespace {

// What each kind is: its --kind name, its worker, the lock handle the lock worker takes (a plain
// lock for an election's worker, which campaigns instead), and what its summary adds (the most
// holders at once of a semaphore's permits, the readers' checks of a read-write lock's sides).
struct stress_kind_facts {
  stress_kind kind;
  std::string_view name;
  asio::awaitable<void> (*work)(client&, stress_options const&, totals&, history_log&, error_report&);
  redisync::lock (*lock_of)(owner const& me, std::string const& name);
  bool permits;     // --permits sets them if none are set; the summary counts holders
  bool read_write;  // a side of a read-write lock: the summary has the readers' checks
};

stress_kind_facts const& facts_of(stress_kind kind);

redisync::lock plain_handle(owner const& me, std::string const& name) { return me.lock(name); }
redisync::lock fair_handle(owner const& me, std::string const& name) { return me.fair_lock(name); }
redisync::lock read_handle(owner const& me, std::string const& name) { return me.read_write_lock(name).read(); }
redisync::lock write_handle(owner const& me, std::string const& name) { return me.read_write_lock(name).write(); }

// The hold of one iteration: the lock, or the leadership of the election named --lock (its term
// is the token).
asio::awaitable<std::tuple<error_code, held>> take(client& c, redisync::lock& lock, owner const& me,
                                                    stress_options const& o) {
  std::tuple<error_code, held> acquired;
  // Two statements: GCC 12 mishandles co_await inside a conditional expression.
  if (o.kind == stress_kind::election) {
    // The value says which process leads: `<pid>/<owner>`.
    auto value = fmt::format("{}/{}", ::getpid(), me.id());
    acquired = co_await c.election(o.lock).campaign(std::move(value), asio::as_tuple(asio::use_awaitable));
  } else if (o.lease_ms) {
    acquired = co_await lock.acquire(std::chrono::milliseconds{*o.lease_ms}, asio::as_tuple(asio::use_awaitable));
  } else {
    acquired = co_await lock.acquire(asio::as_tuple(asio::use_awaitable));
  }
  co_return acquired;
}

// Lets go of it: a lock's release, or a resignation.
asio::awaitable<error_code> let_go(client& c, held& h, stress_options const& o) {
  std::tuple<error_code> released;
  if (o.kind == stress_kind::election) {
    released = co_await c.election(o.lock).resign(h, asio::as_tuple(asio::use_awaitable));
  } else {
    released = co_await h.release(asio::as_tuple(asio::use_awaitable));
  }
  co_return std::get<0>(released);
}

// What a worker read under its hold: the counter (counting itself into the open windows of a
// read-write lock's side first), or the error of the read.
struct under_hold {
  error_code ec;
  resp::value counter;
};

asio::awaitable<under_hold> look_under(client& c, stress_options const& o, totals& t, hold_window const& w) {
  under_hold out;
  if (o.kind != stress_kind::read && o.kind != stress_kind::write) {
    resp::request get;
    get.push("GET", o.counter);
    std::tie(out.ec, out.counter) = co_await try_command(c, std::move(get));
    co_return out;
  }
  auto [cec, mine, other, counter] = co_await open_window(c, w, o.counter);
  out.ec = cec;
  out.counter = std::move(counter);
  if (!cec && o.kind == stress_kind::read) {
    t.max_concurrent_readers = std::max(t.max_concurrent_readers, mine);
    if (other > 0) ++t.overlaps;
  } else if (!cec && (mine > 1 || other > 0)) {
    ++t.overlaps;
  }
  co_return out;
}

// The write carries the token and the value it read: the resource refuses tokens older than one it
// has seen, and a value that changed meanwhile. Logged before it is sent, so that a history read
// after a kill still knows the write may have run.
asio::awaitable<void> fenced_write_under(client& c, stress_options const& o, totals& t, history_log& log,
                                         error_report& report, owner const& me, held const& h, under_hold const& seen,
                                         std::int64_t value) {
  log.write("writing", me.id(), h.token(), {{"value", value + 1}, {"valid_until_ns", monotonic_ns(h.valid_until())}});
  fenced_write w{.fence_key = *o.fence_key, .key = o.counter, .value = std::to_string(value + 1),
                 .token = h.token(), .expected = std::string{seen.counter.text()}};
  auto [wec, accepted] = co_await c.fenced_set(std::move(w), asio::as_tuple(asio::use_awaitable));
  if (wec == error::ambiguous) ++t.unknown;
  if (wec) {
    ++t.errors;
    report.add("fenced write", wec);
    log.write(wec == error::ambiguous ? "write_unknown" : "write_failed", me.id(), h.token(), {{"detail", wec.message()}});
  } else if (accepted) {
    ++t.accepted;
    log.write("write_accepted", me.id(), h.token());
  } else {
    ++t.rejected;
    log.write("write_rejected", me.id(), h.token());
  }
}

// What the worker does with what it read: a fenced write, a reader's second look (the counter must
// be what it was when the read began), or a plain write.
asio::awaitable<void> use_hold(client& c, stress_options const& o, totals& t, history_log& log, error_report& report,
                               owner const& me, held const& h, under_hold const& seen) {
  std::int64_t value = 0;
  if (!seen.ec && !seen.counter.is_null()) seen.counter.as_integer(value);
  if (seen.ec) {
    ++t.errors;  // no write without a read; the lock is still released after
    report.add("read", seen.ec);
    log.write("error", me.id(), h.token(), {{"detail", seen.ec.message()}});
    co_return;
  }
  if (o.fence_key) {
    co_await fenced_write_under(c, o, t, log, report, me, h, seen, value);
    co_return;
  }
  resp::request req;
  if (o.kind == stress_kind::read) {
    req.push("GET", o.counter);
  } else {
    req.push("SET", o.counter, value + 1);
  }
  auto [ec, again] = co_await try_command(c, std::move(req));
  if (ec) {
    ++t.errors;
    report.add(o.kind == stress_kind::read ? "read" : "write", ec);
    if (o.kind != stress_kind::read) log.write("error", me.id(), h.token(), {{"detail", ec.message()}});
  } else if (o.kind == stress_kind::read && again.text() != seen.counter.text()) {
    ++t.changed_under_read;
    log.write("changed_under_read", me.id(), h.token());
  }
}

// The worker's use of the hold ends here, or at its deadline if that came first; every hold ends
// exactly once, released or lost.
asio::awaitable<void> end_hold(client& c, stress_options const& o, totals& t, history_log& log, error_report& report,
                               owner const& me, held& h) {
  log.write("releasing", me.id(), h.token(), {{"valid_until_ns", monotonic_ns(h.valid_until())}});
  auto const rec = co_await let_go(c, h, o);
  if (rec && rec != error::lease_lost) {
    // The client retries the release until it goes through or the lease ends: wait for that.
    ++t.errors;
    report.add("release", rec);
    log.write("release_failed", me.id(), h.token(), {{"detail", rec.message()}});
    co_await h.wait_lost(asio::as_tuple(asio::use_awaitable));
  }
  if (h.status() == hold_status::released) {
    ++t.released;
    log.write("released", me.id(), h.token());
  } else if (h.status() == hold_status::lost) {
    ++t.lost;
    log.write("lost", me.id(), h.token());
  } else {
    ++t.errors;
    report.add("ending a hold", error::not_held);
    log.write("error", me.id(), h.token(), {{"detail", "the hold did not end"}});
  }
  log.forget_hold(h.owner_id());
}

asio::awaitable<void> worker(client& c, stress_options const& o, totals& t, history_log& log,
                             error_report& report) {
  auto me = c.new_owner();
  redisync::lock lock = facts_of(o.kind).lock_of(me, o.lock);
  bool const read_write = o.kind == stress_kind::read || o.kind == stress_kind::write;
  auto ex = co_await asio::this_coro::executor;
  for (int i = 0; i < o.iterations; ++i) {
    // The first attempt goes out now: a fair lock serves waiters in this order.
    log.write("wait", me.id(), 0);
    auto acquired = co_await take(c, lock, me, o);
    auto& [ec, h] = acquired;
    if (ec) {
      if (co_await acquire_failed(o, t, log, report, me.id(), ec)) --i;
      continue;
    }
    ++t.acquired;
    log.write("acquired", me.id(), h.token(), {{"valid_until_ns", monotonic_ns(h.valid_until())}});
    log.name_hold(h.owner_id(), me.id(), h.token());
    hold_window const w{o.lock, o.kind == stress_kind::read, fmt::format("{}:{}:{}", ::getpid(), me.id(), i),
                        monotonic_ns(h.valid_until()) / 1000};
    auto const seen = co_await look_under(c, o, t, w);
    if (o.hold_ms > 0) {
      asio::steady_timer pause{ex, std::chrono::milliseconds{o.hold_ms}};
      co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    co_await use_hold(c, o, t, log, report, me, h, seen);
    if (read_write) {
      if (auto oec = co_await close_window(c, w)) {
        ++t.errors;
        report.add("counting out", oec);
      }
    }
    co_await end_hold(c, o, t, log, report, me, h);
  }
}

constexpr std::array<stress_kind_facts, 10> stress_kinds{{
    {stress_kind::lock, "lock", worker, plain_handle, false, false},
    {stress_kind::fair, "fair", worker, fair_handle, false, false},
    {stress_kind::read, "read", worker, read_handle, false, true},
    {stress_kind::write, "write", worker, write_handle, false, true},
    {stress_kind::semaphore, "semaphore", permit_worker, nullptr, true, false},
    {stress_kind::permits, "permits", permit_worker, nullptr, true, false},
    {stress_kind::fair_permits, "fair-permits", permit_worker, nullptr, true, false},
    {stress_kind::multi, "multi", multi_worker, nullptr, false, false},
    {stress_kind::election, "election", worker, plain_handle, false, false},
    {stress_kind::latch, "latch", latch_worker, nullptr, false, false},
}};

stress_kind_facts const& facts_of(stress_kind kind) {
  return *std::find_if(stress_kinds.begin(), stress_kinds.end(), [kind](auto const& k) { return k.kind == kind; });
}

asio::awaitable<int> stress(asio::io_context& ctx, stress_options o) {
  history_log log{o.history};
  auto cfg = config_from_url(o.url);
  cfg.watchdog_lease = std::chrono::milliseconds{o.watchdog_ms};
  cfg.watchdog_tick = std::min(cfg.watchdog_tick, cfg.watchdog_lease / 10);
  // A release sent again after its outcome was lost with the connection is told released even if
  // the hold is gone (the first call may have run), where a first call that finds it gone ends it
  // lost: the history tells them apart, for the checks of what a restart without persistence erased.
  cfg.on_event = [print = std::move(cfg.on_event), &log](event const& e) {
    if (e.kind == event_kind::outcome_resolved && e.detail == "release") {
      log.write_for_hold("release_repeated", e.owner);
    }
    print(e);
  };
  client c{ctx.get_executor(), cfg};
  metrics_port const serving{c, o.metrics};
  c.start();
  co_await connect(c);
  totals t;
  error_report report;
  auto const& facts = facts_of(o.kind);
  if (facts.permits) {
    // The first process sets the permits; the others find them set.
    auto owner = c.new_owner();
    std::tuple<error_code, bool> set;
    if (o.kind == stress_kind::semaphore) {
      set = co_await owner.semaphore(o.lock).try_set_permits(o.permits, asio::as_tuple(asio::use_awaitable));
    } else {
      set = co_await owner.permits(o.lock).try_set_permits(o.permits, asio::as_tuple(asio::use_awaitable));
    }
    if (auto const ec = std::get<0>(set)) {
      std::cerr << fmt::format("redisync stress: setting {} permits on '{}' failed: {}\n", o.permits, o.lock, ec.message());
      c.stop();
      co_return 1;
    }
  }
  auto const start = monotonic_ns();
  int running = o.workers;
  asio::steady_timer all_done{ctx, asio::steady_timer::time_point::max()};
  for (int w = 0; w < o.workers; ++w) {
    asio::co_spawn(ctx, facts.work(c, o, t, log, report), [&](std::exception_ptr e) {
      if (e) {
        ++t.errors;
        try {
          std::rethrow_exception(e);
        } catch (std::exception const& what) {
          std::cerr << "redisync stress: a worker stopped: " << what.what() << "\n";
        }
      }
      if (--running == 0) all_done.cancel();
    });
  }
  co_await all_done.async_wait(asio::as_tuple(asio::use_awaitable));
  auto const elapsed = double(monotonic_ns() - start) / 1e9;
  c.stop();
  json::object summary{{"lock", o.lock},         {"kind", facts.name},
                       {"workers", o.workers},   {"iterations", o.iterations},
                       {"acquired", t.acquired}, {"released", t.released},
                       {"errors", t.errors},     {"lost", t.lost},
                       {"accepted", t.accepted}, {"rejected", t.rejected},
                       {"unknown", t.unknown},   {"elapsed_s", elapsed},
                       {"pid", ::getpid()}};
  if (facts.read_write) {
    summary["max_concurrent_readers"] = t.max_concurrent_readers;
    summary["overlaps"] = t.overlaps;
    summary["changed_under_read"] = t.changed_under_read;
  }
  if (facts.permits) {
    summary["permits"] = o.permits;
    summary["max_holders"] = t.max_holders;
    summary["overlaps"] = t.overlaps;  // holds that saw more holders than permits
  }
  std::cout << json_text(summary) << std::endl;
  if (!log.failure().empty()) {
    std::cerr << fmt::format("redisync stress: the history file '{}' is incomplete: {}\n", *o.history, log.failure());
    co_return 1;
  }
  co_return t.errors == 0 && t.overlaps == 0 && t.changed_under_read == 0 ? 0 : 1;
}

// The row of `--kind`, or a usage error that names them all.
stress_kind_facts const& kind_named(std::string const& kind) {
  auto const named =
      std::find_if(stress_kinds.begin(), stress_kinds.end(), [&](auto const& k) { return k.name == kind; });
  if (named != stress_kinds.end()) return *named;
  std::string names;
  for (auto const& k : stress_kinds) {
    if (!names.empty()) names += &k == &stress_kinds.back() ? " or " : ", ";
    names += k.name;
  }
  throw usage_error{"--kind must be " + names + ", not '" + kind + "'"};
}

// What each kind refuses of the other options.
void check_kind_options(stress_options& o, po::variables_map const& vm, stress_kind_facts const& named) {
  if (o.kind == stress_kind::latch) {
    in_range("--permits (the latch's count)", o.permits, 1, 1'000'000);
    if (vm.count("fence-key") || o.lease_ms) throw usage_error{"a latch has no holds: no --fence-key or --lease-ms"};
  } else if (named.permits) {
    in_range("--permits", o.permits, 1, 1'000'000);
    if (vm.count("fence-key")) throw usage_error{"a semaphore's holders write side by side: no --fence-key"};
  } else if (!vm["permits"].defaulted()) {
    throw usage_error{"--permits is for --kind semaphore, permits, fair-permits or latch"};
  }
  if (o.kind == stress_kind::election && o.lease_ms) {
    throw usage_error{"leadership is held with the watchdog's lease: --watchdog-ms, not --lease-ms"};
  }
  if (o.kind == stress_kind::semaphore && o.lease_ms) throw usage_error{"a Redisson semaphore's permits have no lease: no --lease-ms"};
  if (vm.count("fence-key") && o.kind == stress_kind::read) throw usage_error{"a reader writes nothing: no --fence-key"};
  if (o.kind == stress_kind::multi) {
    if (vm.count("counter")) throw usage_error{"a multi-lock counts each name in <name>:counter: no --counter"};
    for (auto const& name : multi_names(o.lock)) {
      if (name.empty()) throw usage_error{"--lock of a multi-lock names locks between commas: '" + o.lock + "' has an empty one"};
    }
  }
}

}  // namespace

int stress_main(std::vector<std::string> const& args) {
  stress_options o;
  po::options_description options{"stress options"};
  options.add_options()
      ("redis", po::value(&o.url)->required(), "Redis URL, redis://[user:pass@]host:port[/db]")
      ("lock", po::value(&o.lock)->required(), "lock name (a multi-lock's names: a,b,c)")
      ("kind", po::value<std::string>()->default_value("lock"),
       "lock (reentrant), fair, read or write (the two sides of a read-write lock), semaphore (Redisson's), "
       "permits (leased), fair-permits, multi (a multi-lock of the --lock names, each with its own "
       "counter <name>:counter), election (each iteration campaigns, leads with its term as the token, "
       "and resigns) or latch (a barrier: each iteration counts the latch <lock>:<i> of --permits down once "
       "and waits until it opens)")
      ("permits", po::value(&o.permits)->default_value(0),
       "a semaphore's permits (set if it has none); a latch's count")
      ("workers", po::value(&o.workers)->default_value(1), "workers (one owner each)")
      ("iterations", po::value(&o.iterations)->default_value(100), "critical sections per worker")
      ("hold-ms", po::value(&o.hold_ms)->default_value(0), "time between the read and the write")
      ("lease-ms", po::value<int>(), "fixed lease, no watchdog")
      ("watchdog-ms", po::value(&o.watchdog_ms)->default_value(30000),
       "watchdog lease, renewed every third of it (when --lease-ms is not given)")
      ("counter", po::value(&o.counter), "counter key (default <lock>:counter)")
      ("fence-key", po::value<std::string>(), "write through a script that rejects stale fencing tokens")
      ("history", po::value<std::string>(), "append one JSON line per event to this file")
      ("retry-ms", po::value(&o.retry_ms)->default_value(0),
       "after a failed acquire, try again after this pause instead of going on to the next iteration");
  add_metrics_options(options);
  po::variables_map vm;
  int code = 0;
  if (!parse("stress", "Workers take a lock, read a counter, hold, write counter + 1, release.", options, {},
             args, vm, code)) {
    return code;
  }
  if (vm.count("lease-ms")) {
    if (vm.count("watchdog-ms") && !vm["watchdog-ms"].defaulted()) {
      throw usage_error{"--lease-ms and --watchdog-ms exclude each other"};
    }
    o.lease_ms = static_cast<int>(in_range("--lease-ms", vm["lease-ms"].as<int>(), shortest_lease.count(), one_day_ms));
  }
  auto const& named = kind_named(vm["kind"].as<std::string>());
  o.kind = named.kind;
  check_kind_options(o, vm, named);
  if (vm.count("fence-key")) o.fence_key = vm["fence-key"].as<std::string>();
  if (vm.count("history")) o.history = vm["history"].as<std::string>();
  o.metrics = metrics_options_from(vm);
  if (o.counter.empty()) o.counter = o.lock + ":counter";
  in_range("the lock name's length in bytes", static_cast<std::int64_t>(o.lock.size()), 1, 64 * 1024);
  in_range("--workers", o.workers, 1, 10000);
  in_range("--iterations", o.iterations, 0, 1'000'000'000);
  in_range("--hold-ms", o.hold_ms, 0, one_day_ms);
  in_range("--retry-ms", o.retry_ms, 0, one_day_ms);
  // The watchdog renews every third of its lease on a wheel of at least 3 ms ticks.
  in_range("--watchdog-ms", o.watchdog_ms, 30, one_day_ms);
  asio::io_context ctx{1};
  return run(ctx, stress(ctx, std::move(o)));
}

}  // namespace redisync::cli
