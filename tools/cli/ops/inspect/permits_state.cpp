// Leased permits as Redis holds them (permits_calls.lua): the total in the semaphore's hash, each
// holder's '<k>:<token>' in the holders hash, each lease's end (server ms) in the leases zset.

#include "cli/ops/inspect/permits_state.hpp"

#include "cli/ops/inspect/inspect.hpp"

#include "primitives/permits/protocol.hpp"

#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <charconv>
#include <map>

namespace redisync::cli {

namespace asio = boost::asio;
namespace json = boost::json;

asio::awaitable<bool> is_leased_permits(client& c, std::string const& name) {
  resp::request has;
  has.push("HEXISTS", name, "permits");
  auto const r = co_await c.exec(std::move(has), asio::use_awaitable);
  co_return r[0].integer() == 1;
}

asio::awaitable<json::object> read_permits_state(client& c, std::string const& name) {
  namespace proto = detail::permits_protocol;
  auto const numsub = numsub_command(c);
  resp::request req;
  req.push("HGET", name, "permits");
  req.push("HGETALL", proto::holders_key_of(name));
  req.push("ZRANGE", proto::leases_key_of(name), 0, -1, "WITHSCORES");
  req.push("TIME");
  req.push("PUBSUB", numsub, proto::channel_of(name));
  req.push("ZCARD", proto::queue_key_of(name));
  auto const r = co_await c.exec(std::move(req), asio::use_awaitable);
  if (auto const ec = check_replies(r)) throw boost::system::system_error{ec, "reading the permits " + name};
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
  co_return json::object{{"name", name},
                         {"node", c.node_of(name)},
                         {"type", "permits"},
                         {"permits", total},
                         {"permits_free", std::max<std::int64_t>(total - used, 0)},
                         {"holders", holders},
                         {"fair_queue", r[5].integer()},
                         {"subscribers", subscribers_in(r[4])}};
}

}  // namespace redisync::cli
