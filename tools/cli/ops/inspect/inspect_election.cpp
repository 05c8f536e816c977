// redisync inspect --election: who leads (term, value, lease left), the candidates waiting and the
// observers listening (subscribers of the lock's and the election's channels), and the last
// changes in the election's log, newest first.

#include "cli/common/json_text.hpp"
#include "cli/ops/inspect/inspect.hpp"

#include "primitives/election/campaign.hpp"
#include "primitives/lock_protocol/protocol.hpp"

#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <fmt/core.h>

#include <iostream>

namespace redisync::cli {

namespace asio = boost::asio;
namespace json = boost::json;
namespace proto = detail::election_protocol;

namespace {

constexpr int changes_shown = 5;

// The fields of a log entry ({id, {field, value, ...}}) as an object, with its id.
json::object entry_of(resp::value const& entry) {
  json::object out;
  auto const e = entry.elements();
  if (e.size() != 2) return out;
  out["id"] = std::string{e[0].text()};
  auto const fields = e[1].elements();
  for (std::size_t i = 0; i + 1 < fields.size(); i += 2) {
    out[std::string{fields[i].text()}] = std::string{fields[i + 1].text()};
  }
  return out;
}

}  // namespace

asio::awaitable<void> inspect_election(client& c, std::string const& name, bool as_json) {
  auto const leader = co_await c.election(name).leader(asio::use_awaitable);
  auto const lock = proto::lock_key_of(name);
  auto const log = proto::log_key_of(name);
  auto const numsub = numsub_command(c);
  resp::request req;
  req.push("PTTL", lock);
  req.push("PUBSUB", numsub, detail::lock_protocol::channel_of(lock));
  req.push("PUBSUB", numsub, proto::channel_of(name));
  req.push("XLEN", log);
  req.push("XREVRANGE", log, "+", "-", "COUNT", changes_shown);
  auto const r = co_await c.exec(std::move(req), asio::use_awaitable);
  auto const candidates = subscribers_in(r[1]);
  auto const observers = subscribers_in(r[2]);
  json::array changes;
  for (auto const& e : r[4].elements()) changes.push_back(entry_of(e));
  if (as_json) {
    json::object out{{"name", name}, {"node", c.node_of(lock)}, {"type", "election"},
                     {"candidate_clients", candidates}, {"observer_clients", observers},
                     {"changes_logged", r[3].integer()}, {"last_changes", changes}};
    if (leader) {
      out["leader"] = json::object{{"term", leader->term}, {"value", leader->value}, {"lease_left_ms", r[0].integer()}};
    }
    std::cout << json_text(out) << std::endl;
    co_return;
  }
  fmt::print("election      {}\n", name);
  fmt::print("node          {}\n", c.node_of(lock));
  if (leader) {
    fmt::print("leader        {} (term {}, lease left {} ms)\n", leader->value, leader->term, r[0].integer());
  } else {
    fmt::print("leader        none\n");
  }
  fmt::print("candidates    {} client(s) waiting on {}\n", candidates, detail::lock_protocol::channel_of(lock));
  fmt::print("observers     {} client(s) on {}\n", observers, proto::channel_of(name));
  fmt::print("log           {} change(s) in {}, newest first:\n", r[3].integer(), log);
  for (auto const& change : changes) {
    auto const& o = change.as_object();
    auto const field = [&](char const* f) -> std::string {
      auto const* v = o.if_contains(f);
      return v ? std::string{v->as_string()} : std::string{};
    };
    fmt::print("  {:<22} {:<9} term {} {}\n", field("id"), field("event"), field("term"), field("value"));
  }
}

}  // namespace redisync::cli
