#include "cli/ops/inspect/lock_state.hpp"

#include "cli/ops/inspect/inspect.hpp"
#include "primitives/fair_lock/protocol.hpp"
#include "primitives/lock_protocol/protocol.hpp"
#include "primitives/rw_lock/protocol.hpp"
#include "routing/hash_slot.hpp"
#include "sync/client_liveness.hpp"

#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <fmt/core.h>

#include <algorithm>

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

// What the lock hash holds: its owners with their counts, a read-write lock's mode, or why the
// hash is no lock (a field that no lock has).
struct lock_hash {
  json::object holders;
  std::string mode;
  std::string foreign;
};

asio::awaitable<lock_hash> read_hash(client& c, std::string const& name) {
  lock_hash out;
  resp::request all;
  all.push("HGETALL", name);
  auto fields = co_await c.exec(std::move(all), asio::use_awaitable);
  auto const e = fields.front().elements();
  for (std::size_t i = 0; i + 1 < e.size() && out.foreign.empty(); i += 2) {
    std::string_view const field = e[i].text(), value = e[i + 1].text();
    std::int64_t count = 0;
    if (field == "mode" && (value == "read" || value == "write")) {
      out.mode = value;
    } else if (field.find(':') != std::string_view::npos && e[i + 1].as_integer(count) && count > 0) {
      out.holders[field] = count;  // an owner (<id>:<number>, a writer's with :write) and its hold count
    } else {
      out.foreign = fmt::format("its field '{}' is '{}'", field, value);
    }
  }
  if (!out.foreign.empty()) {
    out.holders.clear();
    out.mode.clear();
  }
  co_return out;
}

// A read-write lock's sides: each reader's levels with the time left of each, and the writer.
struct lock_sides {
  json::array readers;
  json::value writer = nullptr;
};

asio::awaitable<lock_sides> read_sides(client& c, std::string const& name, json::object const& holders) {
  lock_sides out;
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
      out.writer = json::object{{"owner", owner}, {"count", count}};
      continue;
    }
    json::array levels;
    for (std::int64_t level = 1; level <= std::min(count.as_int64(), max_hold_depth) && next < left.size(); ++level) {
      levels.push_back(left[next++].integer());
    }
    out.readers.push_back(json::object{{"owner", owner}, {"count", count}, {"ttls_ms", levels}});
  }
  co_return out;
}

// The writers marked as waiting (`marks`: ZRANGE of the marks key), in order.
asio::awaitable<json::array> waiting_writers_of(client& c, std::string const& name, resp::value const& marks) {
  json::array out;
  for (auto const& w : co_await queue_by_client(c, name, marks)) {
    auto const mark = detail::rw_protocol::read_mark(w.at("owner").as_string());
    if (!mark) continue;
    out.push_back(json::object{{"owner", mark->writer},
                               {"client", w.at("client")},
                               {"grant_lease_ms", mark->lease_ms},
                               {"alive_for_ms", w.at("alive_for_ms")}});
  }
  co_return out;
}

}  // namespace

asio::awaitable<json::object> read_lock_state(client& c, std::string const& name) {
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
  auto replies = co_await c.exec(std::move(req), asio::use_awaitable);
  if (auto const ec = check_replies(replies)) throw boost::system::system_error{ec, "reading the lock " + name};
  std::string const type{replies[0].text()};
  lock_hash hash;
  if (type == "hash") hash = co_await read_hash(c, name);
  lock_sides sides;
  if (!hash.mode.empty()) sides = co_await read_sides(c, name, hash.holders);
  std::int64_t token = 0;
  if (!replies[2].is_null()) replies[2].as_integer(token);
  json::array queue = co_await queue_by_client(c, name, replies[4]);
  json::array waiting_writers = co_await waiting_writers_of(c, name, replies[7]);
  json::object out{{"name", name},
                   {"node", c.node_of(name)},
                   {"type", type},
                   {"holders", hash.holders},
                   {"pttl_ms", replies[1].integer()},
                   {"fencing_token", token},
                   {"subscribers", subscribers_in(replies[3])},
                   {"fair_queue", queue}};
  if (!hash.foreign.empty()) out["not_a_lock"] = hash.foreign;
  if (!hash.mode.empty() || !waiting_writers.empty()) {
    out["read_write"] = json::object{{"mode", hash.mode},
                                     {"readers", sides.readers},
                                     {"writer", sides.writer},
                                     {"waiting_writers", waiting_writers},
                                     {"subscribers", subscribers_in(replies[6])}};
  }
  co_return out;
}

}  // namespace redisync::cli
