#include "cli/lab/bench/bench.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace redisync::cli::bench {

double r2(double x) { return std::round(x * 100) / 100; }

// Nearest rank: sort, p = s[max(0, ceil(p/100 * n) - 1)].
double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  auto const rank = static_cast<std::size_t>(std::max(0.0, std::ceil(p / 100 * double(v.size())) - 1));
  return v[std::min(rank, v.size() - 1)];
}

namespace {

// The value of `field` in an INFO section's text, as a number.
double info_number(std::string_view text, std::string_view field) {
  auto const at = text.find(std::string{field} + ":");
  if (at == std::string_view::npos) return 0;
  auto const start = at + field.size() + 1;
  return std::strtod(std::string{text.substr(start, text.find('\r', start) - start)}.c_str(), nullptr);
}

std::int64_t status_kb(std::string_view field) {
  std::ifstream in{"/proc/self/status"};
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with(field)) return std::strtoll(line.c_str() + field.size(), nullptr, 10);
  }
  return 0;
}

// Calls per command in the text of INFO's commandstats section.
stats_map command_calls(std::string_view text) {
  stats_map out;
  while (!text.empty()) {
    auto const end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    if (!line.starts_with("cmdstat_")) continue;
    auto const colon = line.find(":calls=");
    if (colon == std::string_view::npos) continue;
    auto const calls = line.substr(colon + 7, line.find(',', colon) - colon - 7);
    std::int64_t n = 0;
    std::from_chars(calls.data(), calls.data() + calls.size(), n);
    out[std::string{line.substr(8, colon - 8)}] = n;
  }
  return out;
}

// The microseconds spent in `command` in the text of INFO's commandstats section (0 if none).
double command_usec(std::string_view text, std::string const& command) {
  // cmdstat_evalsha:calls=3,usec=120,usec_per_call=40.00,...
  auto const at = text.find("cmdstat_" + command + ":");
  if (at == std::string_view::npos) return 0.0;
  auto const usec = text.find(",usec=", at);
  if (usec == std::string_view::npos) return 0.0;
  return std::strtod(std::string{text.substr(usec + 6, text.find(',', usec + 6) - usec - 6)}.c_str(), nullptr);
}

// The text of an INFO request's sections.
asio::awaitable<std::string> info_text(client& admin, resp::request info) {
  auto replies = co_await admin.exec(std::move(info), asio::use_awaitable);
  co_return std::string{replies.front().text()};
}

}  // namespace

asio::awaitable<stats_map> command_stats(client& admin) {
  resp::request req;
  req.push("INFO", "commandstats");
  co_return command_calls(co_await info_text(admin, std::move(req)));
}

asio::awaitable<server_totals> server_totals_now(client& admin) {
  resp::request req;
  req.push("INFO", "commandstats", "cpu", "memory");
  auto const text = co_await info_text(admin, std::move(req));
  co_return server_totals{.calls = command_calls(text),
                          .script_us = command_usec(text, "evalsha"),
                          .cpu_s = info_number(text, "used_cpu_sys") + info_number(text, "used_cpu_user"),
                          .used_memory = info_number(text, "used_memory")};
}

std::int64_t calls(stats_map const& before, stats_map const& after, std::string const& command) {
  auto const a = after.find(command);
  auto const b = before.find(command);
  return (a == after.end() ? 0 : a->second) - (b == before.end() ? 0 : b->second);
}

std::int64_t all_calls(stats_map const& before, stats_map const& after) {
  std::int64_t total = 0;
  for (auto const& [name, count] : after) {
    if (name != "info") total += calls(before, after, name);
  }
  return total;
}

asio::awaitable<void> sleep_for(std::chrono::milliseconds d) {
  asio::steady_timer t{co_await asio::this_coro::executor, d};
  co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
}

asio::awaitable<bool> wait_until(std::function<bool()> condition, std::chrono::seconds limit) {
  auto const deadline = clock_type::now() + limit;
  while (!condition()) {
    if (clock_type::now() > deadline) co_return false;
    co_await sleep_for(std::chrono::milliseconds{5});
  }
  co_return true;
}

asio::awaitable<void> wait_until_scripts_settle(client& admin) {
  for (auto const settle_by = clock_type::now() + std::chrono::seconds{30}; clock_type::now() < settle_by;) {
    auto const before = co_await server_totals_now(admin);
    co_await sleep_for(std::chrono::milliseconds{300});
    auto const after = co_await server_totals_now(admin);
    if (calls(before.calls, after.calls, "evalsha") < 20) co_return;
  }
}

command_delta delta(stats_map const& before, stats_map const& after, std::int64_t per) {
  std::vector<std::pair<std::string, std::int64_t>> d;
  std::int64_t total = 0;
  for (auto const& [name, calls] : after) {
    if (name == "info") continue;
    auto const it = before.find(name);
    std::int64_t const x = calls - (it == before.end() ? 0 : it->second);
    if (x > 0) {
      d.emplace_back(name, x);
      total += x;
    }
  }
  std::stable_sort(d.begin(), d.end(), [](auto const& a, auto const& b) { return a.second > b.second; });
  command_delta out;
  per = std::max<std::int64_t>(per, 1);
  std::int64_t scripts = 0;
  for (auto const& [name, x] : d) {
    out.breakdown[name] = r2(double(x) / double(per));
    if (name == "eval" || name == "evalsha" || name == "fcall") scripts += x;
  }
  out.per_op = r2(double(total) / double(per));
  out.scripts_per_op = r2(double(scripts) / double(per));
  return out;
}

asio::awaitable<key_counts> count_keys(client& admin) {
  key_counts out;
  std::string cursor = "0";
  do {
    resp::request scan;
    scan.push("SCAN", cursor, "COUNT", 1000);
    auto const reply = co_await command(admin, std::move(scan));
    auto const parts = reply.elements();
    cursor = std::string{parts[0].text()};
    auto const keys = parts[1].elements();
    if (keys.empty()) continue;
    out.live += static_cast<std::int64_t>(keys.size());
    resp::request ttls;
    for (auto const& key : keys) ttls.push("PTTL", key.text());
    for (auto const& ttl : co_await admin.exec(std::move(ttls), asio::use_awaitable)) {
      out.without_expiry += ttl.integer() == -1 ? 1 : 0;
    }
  } while (cursor != "0");
  co_return out;
}

asio::awaitable<std::int64_t> live_keys(client& admin) { co_return (co_await count_keys(admin)).live; }

asio::awaitable<std::int64_t> list_length(client& admin, std::string const& key) {
  resp::request req;
  req.push("LLEN", key);
  co_return (co_await command(admin, std::move(req))).integer();
}

asio::awaitable<bool> run_tasks(std::int64_t count, std::int64_t cap_s, bool& stop,
                                std::function<asio::awaitable<void>(int)> const& task) {
  auto ex = co_await asio::this_coro::executor;
  auto running = std::make_shared<std::int64_t>(count);
  auto all_done = std::make_shared<asio::steady_timer>(ex, asio::steady_timer::time_point::max());
  for (int i = 0; i < count; ++i) {
    asio::co_spawn(ex, task(i), [running, all_done](std::exception_ptr e) {
      if (e) {
        try {
          std::rethrow_exception(e);
        } catch (std::exception const& ex) {
          std::cerr << "bench task failed: " << ex.what() << "\n";
        }
      }
      if (--*running == 0) all_done->cancel();
    });
  }
  all_done->expires_after(std::chrono::seconds{cap_s});
  co_await all_done->async_wait(asio::as_tuple(asio::use_awaitable));
  if (*running == 0) co_return false;
  stop = true;
  all_done->expires_after(std::chrono::seconds{2});
  co_await all_done->async_wait(asio::as_tuple(asio::use_awaitable));
  co_return true;
}

double process_cpu_s() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto const seconds = [](timeval t) { return double(t.tv_sec) + double(t.tv_usec) / 1e6; };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

std::int64_t rss_kb() { return status_kb("VmRSS:"); }

std::int64_t peak_rss_kb() { return status_kb("VmHWM:"); }

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
// The sanitizers' allocator replaces malloc's, and mallinfo2 reads zero under it.
extern "C" std::size_t __sanitizer_get_current_allocated_bytes();
std::int64_t heap_in_use_kb() { return std::int64_t(__sanitizer_get_current_allocated_bytes() / 1024); }
#else
std::int64_t heap_in_use_kb() {
  auto const m = ::mallinfo2();
  return std::int64_t((m.uordblks + m.hblkhd) / 1024);
}
#endif

std::int64_t open_fds() {
  return std::distance(std::filesystem::directory_iterator{"/proc/self/fd"}, std::filesystem::directory_iterator{});
}

}  // namespace redisync::cli::bench
