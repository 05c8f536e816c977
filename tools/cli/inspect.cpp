// redisync inspect: what Redis knows about one lock (reentrant, fair, or read-write), or semaphore
// (inspect_permits.cpp).

#include "cli/json_text.hpp"
#include "cli/inspect.hpp"
#include "primitives/fair_lock/protocol.hpp"
#include "primitives/lock/protocol.hpp"
#include "primitives/rw_lock/protocol.hpp"
#include "routing/hash_slot.hpp"
#include "sync/client_liveness.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <iostream>
#include <map>

namespace redisync::cli {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

// The waiters of a queue judged per client (the fair lock's queue, a read-write lock's writer
// marks) in order, each with its client and how long that client's liveness key lasts (one key per
// client beside the lock); `owner` is what follows the client in the member.
asio::awaitable<json::array> queue_by_client(client& c, std::string const& name, resp::value const& members) {
  bool const sharded = c.cfg().mode == topology::cluster;
  auto const prefix = detail::sync::alive_prefix(sharded, sharded ? detail::routing::hash_slot(name) : 0);
  json::array queue;
  std::vector<std::string> clients;
  for (auto const& member : members.elements()) {
    auto const text = member.text();
    auto const slash = text.find('/');
    auto const client_id = slash == std::string_view::npos ? std::string_view{} : text.substr(0, slash);
    queue.push_back(json::object{{"owner", text.substr(slash == std::string_view::npos ? 0 : slash + 1)},
                                 {"client", client_id}});
    if (std::find(clients.begin(), clients.end(), client_id) == clients.end()) clients.emplace_back(client_id);
  }
  if (clients.empty()) co_return queue;
  resp::request req;
  for (auto const& id : clients) req.push("PTTL", prefix + id);
  auto const ttls = co_await c.exec(std::move(req), asio::use_awaitable);
  for (auto& w : queue) {
    auto const at = std::find(clients.begin(), clients.end(), w.at("client").as_string()) - clients.begin();
    auto const ttl = ttls[static_cast<std::size_t>(at)].integer();
    w.as_object()["alive_for_ms"] = std::max<std::int64_t>(ttl, 0);
  }
  co_return queue;
}

// What NAME is, when its keys cannot say: a latch's string looks like a Redisson semaphore's, and
// an election's keys are its own.
enum class read_as { found, latch, election };

asio::awaitable<int> inspect(asio::io_context& ctx, std::string url, std::string name, bool as_json, read_as what) {
  client c{ctx.get_executor(), config_from_url(url)};
  c.start();
  co_await connect(c);
  if (what != read_as::found) {
    if (what == read_as::latch) {
      co_await inspect_latch(c, name, as_json);
    } else {
      co_await inspect_election(c, name, as_json);
    }
    c.stop();
    co_return 0;
  }
  auto const numsub = numsub_command(c);
  resp::request req;
  req.push("TYPE", name);
  req.push("PTTL", name);
  req.push("GET", detail::lock_protocol::token_key_of(name));
  req.push("PUBSUB", numsub, detail::lock_protocol::channel_of(name));
  // The fair lock's queue, in order (each waiter as `client/owner`).
  req.push("ZRANGE", detail::fair_protocol::queue_key_of(name), 0, -1);
  req.push("TIME");
  // The read-write lock's channel and its waiting writers' marks.
  req.push("PUBSUB", numsub, detail::rw_protocol::channel_of(name));
  req.push("ZRANGE", detail::rw_protocol::marks_key_of(name), 0, -1);
  auto [ec, replies] = co_await c.exec(std::move(req), asio::as_tuple(asio::use_awaitable));
  if (!ec) ec = check_replies(replies);
  if (ec) {
    std::cerr << "redisync inspect: " << ec.message() << "\n";
    c.stop();
    co_return 1;
  }
  std::string const type{replies[0].text()};
  if (co_await inspect_semaphore(c, name, type, as_json)) {
    c.stop();
    co_return 0;
  }
  json::object holders;
  std::string mode;     // a read-write lock's
  std::string foreign;  // why a hash is no lock: a field that no lock has
  if (type == "hash") {
    resp::request all;
    all.push("HGETALL", name);
    auto fields = co_await c.exec(std::move(all), asio::use_awaitable);
    auto const e = fields.front().elements();
    for (std::size_t i = 0; i + 1 < e.size() && foreign.empty(); i += 2) {
      std::string_view const field = e[i].text(), value = e[i + 1].text();
      std::int64_t count = 0;
      if (field == "mode" && (value == "read" || value == "write")) {
        mode = value;
      } else if (field.find(':') != std::string_view::npos && e[i + 1].as_integer(count) && count > 0) {
        holders[field] = count;  // an owner (<id>:<number>, a writer's with :write) and its hold count
      } else {
        foreign = fmt::format("its field '{}' is '{}'", field, value);
      }
    }
    if (!foreign.empty()) {
      holders.clear();
      mode.clear();
    }
  }
  // A read-write lock: each reader's levels with the time left of each, and the writer.
  json::array readers;
  json::value writer = nullptr;
  if (!mode.empty()) {
    resp::request ttls;
    for (auto const& [owner, count] : holders) {
      if (owner.ends_with(":write")) continue;
      // (A count past the depth limit was tampered with: its levels past it were never made.)
      for (std::int64_t level = 1; level <= std::min(count.as_int64(), max_hold_depth); ++level) {
        ttls.push("PTTL", fmt::format("{}:{}:rwlock_timeout:{}", detail::rw_protocol::timeout_base_of(name),
                                      std::string_view{owner}, level));
      }
    }
    response left;
    if (!ttls.empty()) left = co_await c.exec(std::move(ttls), asio::use_awaitable);
    std::size_t next = 0;
    for (auto const& [owner, count] : holders) {
      if (owner.ends_with(":write")) {
        writer = json::object{{"owner", owner}, {"count", count}};
        continue;
      }
      json::array levels;
      for (std::int64_t level = 1; level <= std::min(count.as_int64(), max_hold_depth) && next < left.size();
           ++level) {
        levels.push_back(left[next++].integer());
      }
      readers.push_back(json::object{{"owner", owner}, {"count", count}, {"ttls_ms", levels}});
    }
  }
  std::int64_t token = 0;
  if (!replies[2].is_null()) replies[2].as_integer(token);
  auto const subscribers = subscribers_in(replies[3]);
  std::int64_t const pttl = replies[1].integer();
  json::array queue = co_await queue_by_client(c, name, replies[4]);
  json::array waiting_writers;
  for (auto const& w : co_await queue_by_client(c, name, replies[7])) {
    auto const mark = detail::rw_protocol::read_mark(w.at("owner").as_string());
    if (!mark) continue;
    waiting_writers.push_back(json::object{{"owner", mark->writer},
                                           {"client", w.at("client")},
                                           {"grant_lease_ms", mark->lease_ms},
                                           {"alive_for_ms", w.at("alive_for_ms")}});
  }
  auto const rw_subscribers = subscribers_in(replies[6]);
  auto const node = c.node_of(name);
  c.stop();

  if (as_json) {
    json::object out{{"name", name},   {"node", node},   {"type", type},   {"holders", holders},
                     {"pttl_ms", pttl}, {"fencing_token", token}, {"subscribers", subscribers},
                     {"fair_queue", queue}};
    if (!foreign.empty()) out["not_a_lock"] = foreign;
    if (!mode.empty() || !waiting_writers.empty()) {
      out["read_write"] = json::object{{"mode", mode},
                                       {"readers", readers},
                                       {"writer", writer},
                                       {"waiting_writers", waiting_writers},
                                       {"subscribers", rw_subscribers}};
    }
    std::cout << json_text(out) << std::endl;
    co_return 0;
  }
  fmt::print("lock          {}\n", name);
  fmt::print("node          {}\n", node);
  if (type == "none") {
    fmt::print("state         free\n");
  } else if (type != "hash") {
    fmt::print("state         the key holds a {}, not a lock\n", type);
  } else if (!foreign.empty()) {
    fmt::print("state         the key holds a hash that is not a lock: {}\n", foreign);
  } else {
    fmt::print("state         held{}\n", mode.empty() ? "" : fmt::format(" (read-write lock, mode {})", mode));
    if (mode.empty()) {
      for (auto const& [owner, count] : holders) {
        fmt::print("holder        {} (hold count {})\n", std::string_view{owner}, count.as_int64());
      }
    }
    for (auto const& r : readers) {
      auto const& o = r.as_object();
      std::string ttls;
      for (auto const& t : o.at("ttls_ms").as_array()) ttls += fmt::format("{}{} ms", ttls.empty() ? "" : ", ", t.as_int64());
      fmt::print("reader        {} (hold count {}; levels' ttl {})\n", std::string_view{o.at("owner").as_string()},
                 o.at("count").as_int64(), ttls);
    }
    if (writer.is_object()) {
      fmt::print("writer        {} (hold count {})\n", std::string_view{writer.at("owner").as_string()},
                 writer.at("count").as_int64());
    }
    fmt::print("ttl           {}\n", pttl >= 0 ? fmt::format("{} ms", pttl) : std::string{"no expiry"});
  }
  fmt::print("fencing token {}\n", token);
  if (mode.empty()) {
    fmt::print("subscribers   {} client(s) on {}\n", subscribers, detail::lock_protocol::channel_of(name));
  } else {
    fmt::print("subscribers   {} client(s) on {}\n", rw_subscribers, detail::rw_protocol::channel_of(name));
  }
  for (auto const& w : waiting_writers) {
    fmt::print("waiting writer {} (client {}, alive for another {} ms; keeps new readers out meanwhile)\n",
               std::string_view{w.at("owner").as_string()}, std::string_view{w.at("client").as_string()},
               w.at("alive_for_ms").as_int64());
  }
  // A waiter counts as alive while its client's key lasts; 0: dead, dropped at the next look.
  for (std::size_t i = 0; i < queue.size(); ++i) {
    auto const& w = queue[i].as_object();
    fmt::print("fair queue {:<3}{} (client {}, alive for another {} ms)\n", i + 1,
               std::string_view{w.at("owner").as_string()}, std::string_view{w.at("client").as_string()},
               w.at("alive_for_ms").as_int64());
  }
  co_return 0;
}

}  // namespace

std::string_view numsub_command(client const& c) {
  return c.cfg().mode == topology::cluster ? "SHARDNUMSUB" : "NUMSUB";
}

std::int64_t subscribers_in(resp::value const& numsub) {
  return numsub.elements().size() == 2 ? numsub.elements()[1].integer() : 0;
}

int inspect_main(std::vector<std::string> const& args) {
  std::string url, name;
  po::options_description options{"inspect options"};
  options.add_options()
      ("redis", po::value(&url)->required(), "Redis URL")
      ("name", po::value(&name)->required(),
       "lock, semaphore, latch or election name (also the first positional argument)")
      ("latch", "read NAME as a count-down latch (its string is the count; otherwise a string is a Redisson semaphore)")
      ("election", "read NAME as a leader election: its leader, candidates, observers and last changes")
      ("json", "print one JSON object");
  po::positional_options_description positional;
  positional.add("name", 1);
  po::variables_map vm;
  int code = 0;
  if (!parse("inspect", "Holders with hold counts, TTL, fencing token, subscribers, the fair queue of a lock, and a read-write lock's mode, readers, writer and waiting writers; a semaphore's permits, holders with their leases and tokens, and listeners; a latch's count and listeners; an election's leader, candidates, observers and last changes.",
             options, positional, args, vm, code)) {
    return code;
  }
  in_range("the lock name's length in bytes", static_cast<std::int64_t>(name.size()), 1, 64 * 1024);
  asio::io_context ctx{1};
  if (vm.count("latch") && vm.count("election")) throw usage_error{"--latch and --election exclude each other"};
  auto const what = vm.count("latch") ? read_as::latch : vm.count("election") ? read_as::election : read_as::found;
  return run(ctx, inspect(ctx, url, name, vm.count("json") > 0, what));
}

}  // namespace redisync::cli
