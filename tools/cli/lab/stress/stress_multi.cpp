// The workers of `redisync stress --kind multi`: each iteration takes a multi-lock of the names in
// --lock (comma-separated, in the order given: processes may list them in different orders) and,
// for each name, reads `<name>:counter`, holds, and writes it + 1 (through the fenced write with
// the member's token and `<fence-key>:<name>` when --fence-key is given). Each name's counter ends
// at the number of multi-locks that took it, unless a loss was reported. The history has every
// hold event once per member, with its `name`: per name it reads like a lock's history.

#include "cli/lab/stress/stress.hpp"

#include <redisync/redisync.hpp>

#include <boost/algorithm/string/split.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace redisync::cli {

namespace asio = boost::asio;
using boost::system::error_code;

std::vector<std::string> multi_names(std::string const& list) {
  std::vector<std::string> names;
  boost::algorithm::split(names, list, [](char c) { return c == ','; });
  return names;
}

namespace {

// Logs `event` once per member, each with its own token and name.
void log_members(history_log& log, std::string_view event, std::string_view owner, multi_held const& h,
                 bool with_deadline = false) {
  for (auto const& m : h.members()) {
    boost::json::object extra{{"name", m.name()}};
    if (with_deadline) extra["valid_until_ns"] = monotonic_ns(m.valid_until());
    log.write(event, owner, m.token(), std::move(extra));
  }
}

// Counter + 1 for one member: false if it failed (counted and logged).
asio::awaitable<bool> write_member(client& c, stress_options const& o, totals& t, history_log& log,
                                   error_report& report, std::string_view owner, held const& m, int hold_ms) {
  std::string const counter = m.name() + ":counter";
  resp::request get;
  get.push("GET", counter);
  auto [gec, current] = co_await try_command(c, std::move(get));
  std::int64_t value = 0;
  if (!gec && !current.is_null()) current.as_integer(value);
  if (hold_ms > 0) {
    asio::steady_timer pause{co_await asio::this_coro::executor, std::chrono::milliseconds{hold_ms}};
    co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  boost::json::object const name{{"name", m.name()}};
  if (gec) {
    report.add("read", gec);
    log.write("error", owner, m.token(), {{"name", m.name()}, {"detail", gec.message()}});
    co_return false;
  }
  if (!o.fence_key) {
    resp::request set;
    set.push("SET", counter, value + 1);
    auto [sec, ignored] = co_await try_command(c, std::move(set));
    if (sec) report.add("write", sec);
    co_return !sec;
  }
  log.write("writing", owner, m.token(),
            {{"name", m.name()}, {"value", value + 1}, {"valid_until_ns", monotonic_ns(m.valid_until())}});
  fenced_write w{.fence_key = *o.fence_key + ":" + m.name(), .key = counter, .value = std::to_string(value + 1),
                 .token = m.token(), .expected = std::string{current.text()}};
  auto [wec, accepted] = co_await c.fenced_set(std::move(w), asio::as_tuple(asio::use_awaitable));
  if (wec == error::ambiguous) ++t.unknown;
  if (wec) {
    report.add("fenced write", wec);
    log.write(wec == error::ambiguous ? "write_unknown" : "write_failed", owner, m.token(), name);
    co_return false;
  }
  ++(accepted ? t.accepted : t.rejected);
  log.write(accepted ? "write_accepted" : "write_rejected", owner, m.token(), name);
  co_return true;
}

}  // namespace

asio::awaitable<void> multi_worker(client& c, stress_options const& o, totals& t, history_log& log,
                                   error_report& report) {
  auto me = c.new_owner();
  auto const locks = me.locks(multi_names(o.lock));
  for (int i = 0; i < o.iterations; ++i) {
    log.write("wait", me.id(), 0);
    std::tuple<error_code, multi_held> acquired;
    if (o.lease_ms) {
      acquired = co_await locks.acquire(std::chrono::milliseconds{*o.lease_ms}, asio::as_tuple(asio::use_awaitable));
    } else {
      acquired = co_await locks.acquire(asio::as_tuple(asio::use_awaitable));
    }
    auto& [ec, h] = acquired;
    if (ec) {
      if (co_await acquire_failed(o, t, log, report, me.id(), ec)) --i;
      continue;
    }
    ++t.acquired;
    log_members(log, "acquired", me.id(), h, true);
    // The hold time is spent once, on the first member.
    int hold_ms = o.hold_ms;
    for (auto const& m : h.members()) {
      if (!co_await write_member(c, o, t, log, report, me.id(), m, hold_ms)) ++t.errors;
      hold_ms = 0;
    }
    log_members(log, "releasing", me.id(), h, true);
    auto [rec] = co_await h.release(asio::as_tuple(asio::use_awaitable));
    if (rec && rec != error::lease_lost) {
      ++t.errors;
      report.add("release", rec);
      co_await h.wait_lost(asio::as_tuple(asio::use_awaitable));
    }
    // Every member's hold ends exactly once, released or lost; the multi-lock's is lost if any is.
    for (auto const& m : h.members()) {
      auto const end = m.status() == hold_status::released ? "released" : "lost";
      log.write(end, me.id(), m.token(), {{"name", m.name()}});
    }
    ++(h.status() == hold_status::lost ? t.lost : t.released);
  }
}

}  // namespace redisync::cli
