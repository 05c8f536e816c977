// The workers of `redisync stress --kind semaphore|permits|fair-permits`: each iteration takes one permit, opens
// its hold window where every process sees it (hold_windows.hpp: the holders side of the name), so
// that the most holders at once across processes is known and never above the permits, INCRs the
// counter (holders work side by side: the counter ends at the sum of acquisitions unless a loss
// was reported) and gives the permit back. A Redisson semaphore's permit has no lease: its window
// stays open a minute past its start at most (a killed holder's permit is gone for good, so its
// window can only make the count safer).

#include "cli/lab/stress/hold_windows.hpp"
#include "cli/lab/stress/stress.hpp"

#include <redisync/redisync.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace redisync::cli {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

constexpr std::int64_t semaphore_window_us = 60'000'000;

// Takes one permit: a hold of leased permits, or none for a Redisson semaphore.
asio::awaitable<std::tuple<error_code, std::optional<held>>> take(owner const& me, stress_options const& o) {
  if (o.kind == stress_kind::semaphore) {
    auto [ec] = co_await me.semaphore(o.lock).acquire(1, asio::as_tuple(asio::use_awaitable));
    co_return std::tuple{ec, std::optional<held>{}};
  }
  auto const leased = o.kind == stress_kind::fair_permits ? me.fair_permits(o.lock) : me.permits(o.lock);
  std::tuple<error_code, held> got;
  if (o.lease_ms) {
    got = co_await leased.acquire(1, std::chrono::milliseconds{*o.lease_ms}, asio::as_tuple(asio::use_awaitable));
  } else {
    got = co_await leased.acquire(1, asio::as_tuple(asio::use_awaitable));
  }
  auto& [ec, h] = got;
  co_return std::tuple{ec, ec ? std::optional<held>{} : std::optional<held>{std::move(h)}};
}

}  // namespace

asio::awaitable<void> permit_worker(client& c, stress_options const& o, totals& t, history_log& log,
                                    error_report& report) {
  auto const me = c.new_owner();
  auto ex = co_await asio::this_coro::executor;
  for (int i = 0; i < o.iterations; ++i) {
    log.write("wait", me.id(), 0);
    auto [ec, h] = co_await take(me, o);
    if (ec) {
      if (co_await acquire_failed(o, t, log, report, me.id(), ec)) --i;
      continue;
    }
    ++t.acquired;
    std::uint64_t const token = h ? h->token() : 0;
    std::int64_t const until_us =
        h ? monotonic_ns(h->valid_until()) / 1000 : monotonic_ns() / 1000 + semaphore_window_us;
    log.write("acquired", me.id(), token, {{"valid_until_ns", until_us * 1000}});
    if (h) log.name_hold(h->owner_id(), me.id(), token);
    hold_window const w{o.lock, true, fmt::format("{}:{}:{}", ::getpid(), me.id(), i), until_us};
    auto [wec, holders, other, ignored] = co_await open_window(c, w, o.counter);
    if (wec) {
      ++t.errors;
      report.add("counting holders", wec);
    } else {
      t.max_holders = std::max(t.max_holders, holders);
      if (holders > o.permits) {
        ++t.overlaps;
        log.write("over_limit", me.id(), token, {{"holders", holders}});
      }
    }
    if (o.hold_ms > 0) {
      asio::steady_timer pause{ex, std::chrono::milliseconds{o.hold_ms}};
      co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    resp::request incr;
    incr.push("INCR", o.counter);
    if (auto [iec, value] = co_await try_command(c, std::move(incr)); iec) {
      ++t.errors;
      report.add("write", iec);
      log.write(iec == error::ambiguous ? "write_unknown" : "error", me.id(), token, {{"detail", iec.message()}});
      if (iec == error::ambiguous) ++t.unknown;
    }
    if (auto cec = co_await close_window(c, w)) {
      ++t.errors;
      report.add("counting out", cec);
    }
    log.write("releasing", me.id(), token, {{"valid_until_ns", until_us * 1000}});
    if (!h) {
      auto [rec] = co_await me.semaphore(o.lock).release(1, asio::as_tuple(asio::use_awaitable));
      if (rec) {
        ++t.errors;
        report.add("release", rec);
        log.write("release_failed", me.id(), 0, {{"detail", rec.message()}});
      } else {
        ++t.released;
        log.write("released", me.id(), 0);
      }
      continue;
    }
    auto [rec] = co_await h->release(asio::as_tuple(asio::use_awaitable));
    if (rec && rec != error::lease_lost) {
      ++t.errors;
      report.add("release", rec);
      log.write("release_failed", me.id(), token, {{"detail", rec.message()}});
      co_await h->wait_lost(asio::as_tuple(asio::use_awaitable));
    }
    if (h->status() == hold_status::released) {
      ++t.released;
      log.write("released", me.id(), token);
    } else {
      ++t.lost;
      log.write("lost", me.id(), token);
    }
    log.forget_hold(h->owner_id());
  }
}

}  // namespace redisync::cli
