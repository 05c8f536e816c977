// The scale workloads of WORKLOADS.md, which only redisync runs: S1 many waiters on one lock (on a
// cold or warm script cache), S2 many locks held by the watchdog, S3 reconnect churn under waiters.

#include "cli/lab/bench/bench.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include <algorithm>

namespace redisync::cli::bench {

using boost::system::error_code;

namespace {

// S1's holder takes the lock (or the one leased permit) that the waiters will wait for; `cold`:
// the script cache is flushed after, so that every waiter meets NOSCRIPT.
asio::awaitable<held> take_what_s1_waits_for(bench_context& b, client& holder_client, std::string const& key,
                                             bool cold, bool permits) {
  held holder;
  if (permits) {
    resp::request reset;
    reset.push("DEL", key);
    co_await command(b.admin, std::move(reset));
    auto const sem = holder_client.new_owner().permits(key);
    co_await sem.try_set_permits(1, asio::use_awaitable);
    holder = co_await sem.acquire(1, asio::use_awaitable);
  } else {
    holder = co_await holder_client.make_lock(key).acquire(asio::use_awaitable);
  }
  if (cold) {
    resp::request flush;
    flush.push("SCRIPT", "FLUSH");
    co_await command(b.admin, std::move(flush));
  }
  co_return holder;
}

// The longest time between grants, from `released` on.
double longest_gap_ms(clock_type::time_point released, std::vector<clock_type::time_point> const& acquired) {
  double max_gap = 0;
  auto last = released;
  for (auto const t : acquired) {
    max_gap = std::max(max_gap, std::chrono::duration<double, std::milli>(t - last).count());
    last = t;
  }
  return max_gap;
}

}  // namespace

asio::awaitable<json::object> s1(bench_context& b, bool cold, bool permits) {
  auto const n = b.p.s1_n;
  // With `permits`, one leased permit instead of the lock: the waiters wait for it.
  std::string const key = permits ? "bench:s1:permits" : "bench:s1:lock";
  client holder_client{co_await asio::this_coro::executor, b.c.cfg()};
  holder_client.start();
  held holder = co_await take_what_s1_waits_for(b, holder_client, key, cold, permits);
  auto const idle_rss = rss_kb();
  auto const cpu_before = process_cpu_s();
  auto const before = co_await command_stats(b.admin);
  // Shared with the waiters' handlers, which may outlive this frame if it ends by an exception.
  struct tally {
    std::vector<clock_type::time_point> acquired;
    std::int64_t errors = 0;
  };
  auto t = std::make_shared<tally>();
  auto& acquired = t->acquired;
  auto& errors = t->errors;
  acquired.reserve(static_cast<std::size_t>(n));
  auto const on_acquired = [t](error_code ec, held h) {
    if (ec) {
      ++t->errors;
      return;
    }
    t->acquired.push_back(clock_type::now());
    h.release(asio::detached);
  };
  for (std::int64_t i = 0; i < n; ++i) {
    if (permits) {
      b.c.new_owner().permits(key).acquire(1, on_acquired);
    } else {
      b.c.make_lock(key).acquire(on_acquired);
    }
  }
  bool const waiting = co_await wait_until([&] { return b.c.metrics().waiters + errors >= std::size_t(n); }, std::chrono::seconds{120});
  co_await sleep_for(std::chrono::milliseconds{1000});  // the holder keeps it 1 s
  auto const waiting_rss = rss_kb();
  auto const released = clock_type::now();
  co_await holder.release(asio::use_awaitable);
  bool const drained =
      co_await wait_until([&] { return std::int64_t(acquired.size()) + errors >= n; }, std::chrono::seconds{120});
  double const drain_s = std::chrono::duration<double>(clock_type::now() - released).count();
  auto const after = co_await command_stats(b.admin);
  auto const peak = peak_rss_kb();
  double const max_gap = longest_gap_ms(released, acquired);
  auto const done = std::int64_t(acquired.size());
  holder_client.stop();
  co_return json::object{
      {"n", n},
      {"primitive", permits ? "leased permits" : "lock"},
      {"cold", cold},
      {"capped", !waiting || !drained},
      {"errors", errors},
      {"drain_s", r2(drain_s)},
      {"max_gap_ms", r2(max_gap)},
      {"scripts_per_cs", r2(double(calls(before, after, "evalsha") + calls(before, after, "eval")) / double(std::max<std::int64_t>(done, 1)))},
      {"full_scripts", calls(before, after, "eval") + calls(before, after, "script|load")},
      {"peak_rss_kb", peak},
      {"rss_per_waiter_kb", r2(double(peak - idle_rss) / double(n))},
      {"rss_per_waiting_waiter_kb", r2(double(waiting_rss - idle_rss) / double(n))},
      {"rss_after_kb", rss_kb()},
      {"client_cpu_s", r2(process_cpu_s() - cpu_before)},
      {"safety_ok", errors == 0 && done == n}};
}

asio::awaitable<json::object> s2(bench_context& b) {
  auto const n = b.p.s2_n;
  auto const idle_rss = rss_kb();
  auto const t0 = clock_type::now();
  auto t = std::make_shared<hold_tally>();
  auto& holds = t->holds;
  auto& errors = t->errors;
  auto& started = t->answered;
  holds.reserve(static_cast<std::size_t>(n));
  // Many acquires in flight at once, as a service with many tasks would have. With S2_READERS,
  // each hold is a read, and that many readers share one read-write lock.
  auto const readers = b.p.s2_readers;
  auto const locks = readers > 0 ? (n + readers - 1) / readers : n;
  auto const lock_name = [&](std::int64_t i) {
    return "bench:s2:lock:" + std::to_string(i);
  };
  auto const hold_handle = [&](std::int64_t i) {
    if (readers == 0) return b.c.make_lock(lock_name(i));
    return b.c.new_owner().read_write_lock(lock_name(i / readers)).read();
  };
  for (std::int64_t i = 0; i < n; ++i) {
    hold_handle(i).acquire([t](error_code ec, held h) {
      ++t->answered;
      if (ec) {
        ++t->errors;
        return;
      }
      t->holds.push_back(std::move(h));
    });
  }
  co_await wait_until([&] { return started >= n; }, std::chrono::seconds{600});
  double const acquire_all_s = std::chrono::duration<double>(clock_type::now() - t0).count();
  auto const cpu0 = process_cpu_s();
  auto const server0 = co_await server_totals_now(b.admin);
  auto const renewal_calls0 = b.c.metrics().renewal_calls;
  auto const renewals0 = b.c.metrics().renewed_holds;
  co_await sleep_for(std::chrono::seconds{b.p.s2_s});
  auto const cpu1 = process_cpu_s();
  auto const server1 = co_await server_totals_now(b.admin);
  auto const renewal_calls = b.c.metrics().renewal_calls - renewal_calls0;
  auto const renewals = b.c.metrics().renewed_holds - renewals0;
  auto const evalsha_calls = calls(server0.calls, server1.calls, "evalsha");
  auto const script_us = server1.script_us - server0.script_us;
  auto const rss = rss_kb();
  // Every lock's TTL, read in pipelines of 1,000.
  std::int64_t min_pttl = std::numeric_limits<std::int64_t>::max();
  for (std::int64_t i = 0; i < locks; i += 1000) {
    resp::request req;
    for (std::int64_t j = i; j < std::min(locks, i + 1000); ++j) req.push("PTTL", lock_name(j));
    auto replies = co_await b.admin.exec(std::move(req), asio::use_awaitable);
    for (auto const& r : replies) min_pttl = std::min(min_pttl, r.integer());
  }
  bool all_held = true;
  for (auto& h : holds) all_held = all_held && h.status() == hold_status::held;
  // Counted when each release has its reply: the count must not race the last of them.
  for (auto& h : holds) h.release([t](error_code) { ++t->released; });
  co_await wait_until([&] { return t->released == holds.size(); }, std::chrono::seconds{600});
  auto const keys_left = co_await live_keys(b.admin);
  double const seconds = double(b.p.s2_s);
  co_return json::object{
      {"n", n},
      {"readers_per_lock", readers},
      {"errors", errors},
      {"capped", false},
      {"acquire_all_s", r2(acquire_all_s)},
      {"client_cpu_pct", r2(100 * (cpu1 - cpu0) / seconds)},
      {"server_cpu_pct", r2(100 * (server1.cpu_s - server0.cpu_s) / seconds)},
      {"renewal_calls_per_s", r2(double(renewal_calls) / seconds)},
      {"keys_per_renewal_call", r2(double(renewals) / double(std::max<std::uint64_t>(renewal_calls, 1)))},
      {"server_us_per_renewal_call", r2(script_us / double(std::max<std::int64_t>(evalsha_calls, 1)))},
      {"server_us_per_renewed_hold", r2(script_us / double(std::max<std::uint64_t>(renewals, 1)))},
      {"rss_per_lock_kb", r2(double(rss - idle_rss) / double(n))},
      {"min_pttl_ms", min_pttl},
      {"all_held", all_held},
      {"keys_left", keys_left},
      {"safety_ok", errors == 0 && all_held && min_pttl > 0}};
}

namespace {

std::string_view name_of(hold_status s) {
  switch (s) {
    case hold_status::held: return "held";
    case hold_status::uncertain: return "uncertain";
    case hold_status::lost: return "lost";
    case hold_status::released: return "released";
  }
  return "";
}

// Kills the bench client's connection once from the admin's; 1 if the kill met it.
asio::awaitable<std::int64_t> kill_own_connection(bench_context& b) {
  // Asked right after a kill, the question may meet the dead connection: ask again.
  std::int64_t own_id = -1;
  for (int tries = 0; own_id < 0; ++tries) {
    resp::request id;
    id.push("CLIENT", "ID");
    auto [ec, reply] = co_await try_command(b.c, std::move(id));
    if (!ec) own_id = reply.integer();
    if (ec && (tries == 10 || (ec != error::ambiguous && ec != error::not_connected))) {
      throw std::runtime_error{"CLIENT ID failed: " + ec.message()};
    }
  }
  resp::request kill;
  kill.push("CLIENT", "KILL", "ID", own_id);
  co_return (co_await command(b.admin, std::move(kill))).integer();
}

}  // namespace

asio::awaitable<json::object> s3(bench_context& b) {
  std::string const key = "bench:s3:lock";
  auto holder = co_await b.c.make_lock(key).acquire(asio::use_awaitable);
  auto const token = holder.token();
  // Shared with the waiters' handlers, which may outlive this frame if it ends by an exception.
  auto const finished = std::make_shared<std::int64_t>(0);
  auto& done = *finished;
  for (std::int64_t i = 0; i < b.p.s3_w; ++i) {
    b.c.make_lock(key).acquire([finished](error_code, held h) {
      ++*finished;
      if (h) h.release(asio::detached);
    });
  }
  co_await wait_until([&] { return b.c.metrics().waiters >= std::size_t(b.p.s3_w); }, std::chrono::seconds{120});
  co_await sleep_for(std::chrono::milliseconds{200});  // the first waiter's attempt after subscribing
  auto const fds_before = open_fds();
  auto const rss_before = rss_kb();
  auto const heap_before = heap_in_use_kb();
  auto const connects0 = b.c.metrics().connects;
  auto const renewals0 = b.c.metrics().renewal_calls;
  auto const before = co_await command_stats(b.admin);
  std::int64_t kills = 0;
  // A leak grows on; the first reconnects' allocations do not.
  std::int64_t rss_halfway = 0, heap_halfway = 0;
  for (std::int64_t k = 0; k < b.p.s3_k; ++k) {
    if (k == b.p.s3_k / 2) {
      rss_halfway = rss_kb();
      heap_halfway = heap_in_use_kb();
    }
    kills += co_await kill_own_connection(b);
    co_await sleep_for(std::chrono::milliseconds{b.p.s3_gap_ms});
  }
  auto const reconnected = co_await wait_until([&] { return b.c.metrics().connects >= connects0 + kills; }, std::chrono::seconds{30});
  co_await sleep_for(std::chrono::milliseconds{200});
  // A renewal that one of the last kills cut short leaves the hold uncertain until the renewal's
  // retry, a second later, confirms it (or the lease ends): judged only once it is settled.
  auto const is_settled = [&holder] { return holder.status() != hold_status::uncertain; };
  co_await wait_until(is_settled, std::chrono::seconds{40});
  auto const heap_after = heap_in_use_kb();
  auto const after = co_await command_stats(b.admin);
  auto const reconnects = std::int64_t(b.c.metrics().connects - connects0);
  // Each attempt after a reconnect finds the lock taken: HEXISTS in the script. CLIENT ID calls are
  // ours; renewal calls are not attempts.
  auto const attempts = calls(before, after, "hexists");
  auto const status = holder.status();
  bool const hold_kept = holder.token() == token && status == hold_status::held;
  auto const renewal_calls = std::int64_t(b.c.metrics().renewal_calls - renewals0);
  co_await holder.release(asio::use_awaitable);
  co_await wait_until([&] { return done >= b.p.s3_w; }, std::chrono::seconds{120});
  co_return json::object{
      {"kills", kills},
      {"waiters", b.p.s3_w},
      {"capped", !reconnected},
      {"reconnects", reconnects},
      {"spurious_reconnects", reconnects - kills},
      {"scripts_per_reconnect", r2(double(attempts) / double(std::max<std::int64_t>(kills, 1)))},
      {"renewal_calls", renewal_calls},
      {"fds_before", fds_before},
      {"fds_after", open_fds()},
      {"rss_before_kb", rss_before},
      {"rss_halfway_kb", rss_halfway},
      {"rss_after_kb", rss_kb()},
      {"heap_before_kb", heap_before},
      {"heap_halfway_kb", heap_halfway},
      {"heap_after_kb", heap_after},
      {"hold_kept", hold_kept},
      {"hold_status", name_of(status)},
      {"safety_ok", hold_kept && done == b.p.s3_w}};
}

}  // namespace redisync::cli::bench
