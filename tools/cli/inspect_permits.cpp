// redisync inspect on a semaphore: Redisson's (a string: the permits free, and who listens), or
// leased permits (a hash with 'permits'): the permits in all and free, each holder with its
// permits, fencing token and lease left by the server's clock, and who listens.

#include "cli/json_text.hpp"
#include "cli/inspect.hpp"

#include "primitives/permits/protocol.hpp"
#include "primitives/semaphore/acquire.hpp"

#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <fmt/core.h>

#include <charconv>
#include <iostream>
#include <map>

namespace redisync::cli {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

std::int64_t number_in(resp::value const& v) {
  std::int64_t n = 0;
  if (!v.is_null()) v.as_integer(n);
  return n;
}

asio::awaitable<void> redisson_semaphore(client& c, std::string const& name, bool as_json) {
  auto const numsub = numsub_command(c);
  resp::request req;
  req.push("GET", name);
  req.push("PUBSUB", numsub, detail::semaphore_protocol::channel_of(name));
  auto const r = co_await c.exec(std::move(req), asio::use_awaitable);
  auto const free = number_in(r[0]);
  auto const subscribers = subscribers_in(r[1]);
  if (as_json) {
    std::cout << json_text(json::object{{"name", name},
                                              {"node", c.node_of(name)},
                                              {"type", "semaphore"},
                                              {"permits_free", free},
                                              {"subscribers", subscribers}})
              << std::endl;
    co_return;
  }
  fmt::print("semaphore     {} (Redisson's: no holders on the server)\n", name);
  fmt::print("node          {}\n", c.node_of(name));
  fmt::print("permits free  {}\n", free);
  fmt::print("subscribers   {} client(s) on {}\n", subscribers, detail::semaphore_protocol::channel_of(name));
}

asio::awaitable<void> leased_permits(client& c, std::string const& name, bool as_json) {
  namespace proto = detail::permits_protocol;
  auto const numsub = numsub_command(c);
  resp::request req;
  req.push("HGET", name, "permits");
  req.push("HGETALL", proto::holders_key_of(name));
  req.push("ZRANGE", proto::leases_key_of(name), 0, -1, "WITHSCORES");
  req.push("TIME");
  req.push("PUBSUB", numsub, proto::channel_of(name));
  auto const r = co_await c.exec(std::move(req), asio::use_awaitable);
  auto const total = number_in(r[0]);
  std::int64_t seconds = 0, micros = 0;
  r[3].elements()[0].as_integer(seconds);
  r[3].elements()[1].as_integer(micros);
  auto const now_ms = seconds * 1000 + micros / 1000;
  std::map<std::string, std::int64_t, std::less<>> ends;
  // RESP3 answers [member, score] pairs, the score a double; RESP2 a flat list of strings.
  auto const score_of = [&](resp::value const& score) {
    return score.kind() == resp::type::double_number ? static_cast<std::int64_t>(score.number()) : number_in(score);
  };
  auto const l = r[2].elements();
  for (std::size_t i = 0; i < l.size(); ++i) {
    if (l[i].kind() == resp::type::array && l[i].elements().size() == 2) {
      ends[std::string{l[i].elements()[0].text()}] = score_of(l[i].elements()[1]);
    } else if (i + 1 < l.size()) {
      ends[std::string{l[i].text()}] = score_of(l[i + 1]);
      ++i;
    }
  }
  json::array holders;
  std::int64_t used = 0;
  auto const h = r[1].elements();
  for (std::size_t i = 0; i + 1 < h.size(); i += 2) {
    std::string_view const id = h[i].text(), value = h[i + 1].text();
    auto const colon = value.find(':');
    if (id == "used" || colon == std::string_view::npos) continue;
    std::int64_t permits = 0;
    std::from_chars(value.data(), value.data() + colon, permits);
    auto const end = ends.find(id);
    auto const left = end == ends.end() ? 0 : std::max<std::int64_t>(end->second - now_ms, 0);
    if (left > 0) used += permits;  // an ended lease's permits are free for the next acquire
    holders.push_back(json::object{{"permit", id},
                                   {"permits", permits},
                                   {"token", value.substr(colon + 1)},
                                   {"lease_left_ms", left}});
  }
  auto const subscribers = subscribers_in(r[4]);
  if (as_json) {
    std::cout << json_text(json::object{{"name", name},
                                              {"node", c.node_of(name)},
                                              {"type", "permits"},
                                              {"permits", total},
                                              {"permits_free", std::max<std::int64_t>(total - used, 0)},
                                              {"holders", holders},
                                              {"subscribers", subscribers}})
              << std::endl;
    co_return;
  }
  fmt::print("permits       {} (leased)\n", name);
  fmt::print("node          {}\n", c.node_of(name));
  fmt::print("permits       {} in all, {} free\n", total, std::max<std::int64_t>(total - used, 0));
  for (auto const& holder : holders) {
    auto const& o = holder.as_object();
    fmt::print("holder        {} ({} permit(s), token {}, lease left {} ms{})\n", std::string_view{o.at("permit").as_string()},
               o.at("permits").as_int64(), std::string_view{o.at("token").as_string()}, o.at("lease_left_ms").as_int64(),
               o.at("lease_left_ms").as_int64() == 0 ? ": ended, free for the next acquire" : "");
  }
  fmt::print("subscribers   {} client(s) on {} (waiters listen there)\n", subscribers, proto::channel_of(name));
}

}  // namespace

asio::awaitable<bool> inspect_semaphore(client& c, std::string const& name, std::string_view type, bool as_json) {
  if (type == "string") {
    co_await redisson_semaphore(c, name, as_json);
    co_return true;
  }
  if (type != "hash") co_return false;
  resp::request has;
  has.push("HEXISTS", name, "permits");
  auto const r = co_await c.exec(std::move(has), asio::use_awaitable);
  if (r[0].integer() != 1) co_return false;
  co_await leased_permits(c, name, as_json);
  co_return true;
}

}  // namespace redisync::cli
