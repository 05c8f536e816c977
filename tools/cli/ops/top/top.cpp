// redisync top: a live view of the locks and leased permits whose names match a pattern (on every
// master of a cluster), refreshed every second, sorted by waiters; keys change the order or quit.
// Without a terminal, one snapshot as JSON lines.

#include "cli/common/json_text.hpp"
#include "cli/ops/inspect/lock_state.hpp"
#include "cli/ops/inspect/permits_state.hpp"
#include "cli/ops/top/scan_keys.hpp"
#include "cli/ops/top/terminal.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <iostream>
#include <memory>

#include <unistd.h>

namespace redisync::cli {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

struct top_options {
  std::string url;
  std::string match;
  std::chrono::milliseconds interval{1000};
  std::int64_t max_keys = 10000;
};

// One lock's row, from read_lock_state, or leased permits', from read_permits_state.
struct row {
  std::string name;
  std::string kind;     // lock, fair, read-write (read), permits 1/4 free ...
  std::string holders;  // owners with their counts
  std::int64_t ttl_ms = -1;
  std::int64_t token = 0;
  std::int64_t queue = 0;            // the fair queue's waiters (a lock's or fair permits')
  std::int64_t waiting_writers = 0;  // a read-write lock's
  std::int64_t subscribers = 0;
  std::int64_t waiters() const { return queue + waiting_writers; }
};

enum class order { waiters, ttl, name, token };

std::string_view order_name(order o) {
  switch (o) {
    case order::waiters: return "waiters";
    case order::ttl: return "ttl";
    case order::name: return "name";
    case order::token: return "token";
  }
  return "";
}

// Leased permits: TTL is the shortest lease left, TOKEN the latest holder's.
row permits_row_of(json::object const& s) {
  row r;
  r.name = s.at("name").as_string();
  r.kind = fmt::format("permits {}/{} free", s.at("permits_free").as_int64(), s.at("permits").as_int64());
  r.queue = s.at("fair_queue").as_int64();
  r.subscribers = s.at("subscribers").as_int64();
  for (auto const& holder : s.at("holders").as_array()) {
    auto const& h = holder.as_object();
    auto const left = h.at("lease_left_ms").as_int64();
    if (left > 0 && (r.ttl_ms < 0 || left < r.ttl_ms)) r.ttl_ms = left;
    std::string_view const token = h.at("token").as_string();
    std::int64_t t = 0;
    std::from_chars(token.data(), token.data() + token.size(), t);
    r.token = std::max(r.token, t);
    r.holders += fmt::format("{}{}x{}", r.holders.empty() ? "" : " ", std::string_view{h.at("permit").as_string()},
                             h.at("permits").as_int64());
  }
  return r;
}

row row_of(json::object const& s) {
  if (s.at("type") == "permits") return permits_row_of(s);
  row r;
  r.name = s.at("name").as_string();
  auto const* rw = s.if_contains("read_write");
  auto const& queue = s.at("fair_queue").as_array();
  r.queue = static_cast<std::int64_t>(queue.size());
  if (rw) {
    r.kind = fmt::format("read-write ({})", std::string_view{rw->at("mode").as_string()});
    r.waiting_writers = static_cast<std::int64_t>(rw->at("waiting_writers").as_array().size());
    r.subscribers = rw->at("subscribers").as_int64();
  } else {
    r.kind = queue.empty() ? "lock" : "fair";
    r.subscribers = s.at("subscribers").as_int64();
  }
  for (auto const& [owner, count] : s.at("holders").as_object()) {
    r.holders += fmt::format("{}{}x{}", r.holders.empty() ? "" : " ", std::string_view{owner}, count.as_int64());
  }
  r.ttl_ms = s.at("pttl_ms").as_int64();
  r.token = s.at("fencing_token").as_int64();
  return r;
}

asio::awaitable<std::vector<json::object>> snapshot(client& c, top_options const& o) {
  std::vector<json::object> out;
  // Locks and leased permits are hashes. Each refresh asks a cluster for its masters anew: a
  // failover since the last one moves keys to another master.
  key_scan const hashes{.match = o.match, .type = "hash", .max_keys = o.max_keys};
  auto const names = co_await scan_keys(c, hashes);
  for (auto const& name : names) {
    auto state = co_await read_lock_state(c, name);
    if (state.at("type") != "hash") continue;  // gone since the scan
    if (!state.contains("not_a_lock")) {
      out.push_back(std::move(state));
      continue;
    }
    // Neither a lock nor leased permits: a hash of the application's own that happens to match.
    bool const leased = co_await is_leased_permits(c, name);  // not awaited in a condition: GCC 12
    if (leased) out.push_back(co_await read_permits_state(c, name));
  }
  co_return out;
}

void sort_rows(std::vector<row>& rows, order by) {
  auto const key = [by](row const& r) {
    switch (by) {
      case order::waiters: return std::tuple{-r.waiters(), -r.subscribers, std::int64_t{0}};
      case order::ttl: return std::tuple{r.ttl_ms, std::int64_t{0}, std::int64_t{0}};
      case order::token: return std::tuple{-r.token, std::int64_t{0}, std::int64_t{0}};
      case order::name: break;
    }
    return std::tuple{std::int64_t{0}, std::int64_t{0}, std::int64_t{0}};
  };
  std::stable_sort(rows.begin(), rows.end(), [&](row const& a, row const& b) {
    auto const ka = key(a), kb = key(b);
    return ka != kb ? ka < kb : a.name < b.name;
  });
}

std::string cut(std::string_view s, std::size_t width) {
  if (s.size() <= width) return std::string{s};
  return std::string{s.substr(0, width > 1 ? width - 1 : 0)} + "~";
}

void draw(top_options const& o, std::vector<row> const& rows, order by, terminal_size size) {
  std::string screen = "\x1b[H\x1b[2J";
  auto const is_permits = [](row const& r) { return r.kind.starts_with("permits"); };
  auto const permits = std::count_if(rows.begin(), rows.end(), is_permits);
  screen += cut(fmt::format("redisync top  {}  match {}  {} lock(s), {} permits  sorted by {}", o.url, o.match,
                            std::ssize(rows) - permits, permits, order_name(by)),
                size.columns);
  screen += "\r\n";
  screen += cut("keys: w waiters  t ttl  n name  k token  q quit", size.columns) + "\r\n\r\n";
  std::size_t name_width = 12;
  for (auto const& r : rows) name_width = std::clamp(r.name.size(), name_width, std::size_t{40});
  screen += cut(fmt::format("{:<{}} {:<18} {:>9} {:>17} {:>6} {:>7} {:>5}  {}", "NAME", name_width, "KIND", "TTL ms",
                            "TOKEN", "QUEUE", "WRITERS", "SUBS", "HOLDERS"),
                size.columns) +
            "\r\n";
  std::size_t const room = size.rows > 5 ? size.rows - 5 : 1;
  for (std::size_t i = 0; i < rows.size() && i < room; ++i) {
    auto const& r = rows[i];
    screen += cut(fmt::format("{:<{}} {:<18} {:>9} {:>17} {:>6} {:>7} {:>5}  {}", cut(r.name, name_width), name_width,
                              r.kind, r.ttl_ms, r.token, r.queue, r.waiting_writers, r.subscribers, r.holders),
                  size.columns) +
              "\r\n";
  }
  if (rows.size() > room) screen += fmt::format("... {} more\r\n", rows.size() - room);
  std::cout << screen << std::flush;
}

// What the live view and its key reader share: the reader may end after the view (a failed
// refresh), so it holds the state too.
struct view_state {
  explicit view_state(asio::io_context& ctx) : keys{ctx, ::dup(STDIN_FILENO)}, next{ctx} {}
  asio::posix::stream_descriptor keys;
  asio::steady_timer next;  // the next refresh; cancelled to refresh at once
  order by = order::waiters;
  bool quit = false;
};

asio::awaitable<void> read_keys(std::shared_ptr<view_state> v) {
  char key = 0;
  for (;;) {
    auto [ec, n] = co_await asio::async_read(v->keys, asio::buffer(&key, 1), asio::as_tuple(asio::use_awaitable));
    if (ec || key == 'q' || key == 'Q' || key == 3 /* ctrl-c, in raw mode */) break;
    if (key == 'w') v->by = order::waiters;
    if (key == 't') v->by = order::ttl;
    if (key == 'n') v->by = order::name;
    if (key == 'k') v->by = order::token;
    v->next.cancel();
  }
  v->quit = true;
  v->next.cancel();
}

// The live view: a refresh every interval, or at once after a key.
asio::awaitable<void> live(asio::io_context& ctx, client& c, top_options const& o) {
  raw_terminal const raw;
  auto const v = std::make_shared<view_state>(ctx);
  // However the view ends, the key reader ends too: a read left waiting on stdin would keep the
  // io_context running.
  struct stop_reading {
    view_state& v;
    ~stop_reading() { v.keys.cancel(); }
  } const stop{*v};
  asio::co_spawn(ctx, read_keys(v), asio::detached);
  while (!v->quit) {
    std::vector<row> rows;
    for (auto const& s : co_await snapshot(c, o)) rows.push_back(row_of(s));
    sort_rows(rows, v->by);
    draw(o, rows, v->by, size_of_terminal());
    v->next.expires_after(o.interval);
    co_await v->next.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  std::cout << "\r\n";
}

asio::awaitable<int> top(asio::io_context& ctx, top_options o) {
  client c{ctx.get_executor(), config_from_url(o.url)};
  c.start();
  co_await connect(c);
  if (::isatty(STDOUT_FILENO) && ::isatty(STDIN_FILENO)) {
    co_await live(ctx, c, o);
  } else {
    std::vector<row> rows;
    auto states = co_await snapshot(c, o);
    // Sorted as the live view starts: by waiters.
    for (auto const& s : states) rows.push_back(row_of(s));
    sort_rows(rows, order::waiters);
    for (auto const& r : rows) {
      auto const at = std::find_if(states.begin(), states.end(), [&](auto const& s) { return s.at("name").as_string() == r.name; });
      std::cout << json_text(*at) << "\n";
    }
    std::cout << std::flush;
  }
  c.stop();
  co_return 0;
}

}  // namespace

int top_main(std::vector<std::string> const& args) {
  top_options o;
  std::int64_t interval_ms = 1000;
  po::options_description options{"top options"};
  options.add_options()
      ("redis", po::value(&o.url)->required(), "Redis URL")
      ("match", po::value(&o.match)->default_value("*"),
       "a SCAN MATCH pattern of lock and permits names, such as 'orders:*' (on a cluster, on every master)")
      ("interval-ms", po::value(&interval_ms)->default_value(1000), "time between two refreshes")
      ("max-keys", po::value(&o.max_keys)->default_value(10000), "look at no more locks than this (over every master)");
  po::variables_map vm;
  int code = 0;
  if (!parse("top",
             "A live view of the locks and leased permits matching a pattern: kind (permits: free of all), "
             "holders and counts, TTL (permits: the shortest lease left), token, queue, waiting writers, "
             "subscribers; sorted by waiters (keys: w waiters, t ttl, n name, k token, q quit). Without "
             "a terminal, one snapshot as JSON lines (inspect --json's objects).",
             options, {}, args, vm, code)) {
    return code;
  }
  o.interval = std::chrono::milliseconds{in_range("--interval-ms", interval_ms, 100, 3'600'000)};
  in_range("--max-keys", o.max_keys, 1, 1'000'000);
  if (o.match.empty()) throw usage_error{"--match must not be empty (use '*' for every lock)"};
  asio::io_context ctx{1};
  return run(ctx, top(ctx, std::move(o)));
}

}  // namespace redisync::cli
