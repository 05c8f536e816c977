// redisync inspect --latch: a count-down latch's count (Redisson's layout: a string; no key is an
// open latch) and the clients listening on its channel.

#include "cli/common/json_text.hpp"
#include "cli/ops/inspect/inspect.hpp"

#include "primitives/latch/wait.hpp"

#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <fmt/core.h>

#include <iostream>

namespace redisync::cli {

namespace asio = boost::asio;
namespace json = boost::json;

asio::awaitable<void> inspect_latch(client& c, std::string const& name, bool as_json) {
  auto const numsub = numsub_command(c);
  auto const channel = detail::latch_protocol::channel_of(name);
  resp::request req;
  req.push("TYPE", name);
  req.push("GET", name);
  req.push("PUBSUB", numsub, channel);
  auto const r = co_await c.exec(std::move(req), asio::use_awaitable);
  std::string const type{r[0].text()};
  std::int64_t count = 0;
  bool const readable = type == "none" || (type == "string" && r[1].as_integer(count));
  auto const subscribers = subscribers_in(r[2]);
  if (as_json) {
    json::object out{{"name", name}, {"node", c.node_of(name)}, {"type", "latch"}, {"subscribers", subscribers}};
    if (readable) {
      out["count"] = count;
      out["open"] = count <= 0;
    } else {
      out["error"] = fmt::format("the key holds a {} that is no count", type);
    }
    std::cout << json_text(out) << std::endl;
    co_return;
  }
  fmt::print("latch         {} (Redisson's RCountDownLatch layout)\n", name);
  fmt::print("node          {}\n", c.node_of(name));
  if (readable) {
    fmt::print("count         {}{}\n", count, count <= 0 ? " (open)" : "");
  } else {
    fmt::print("count         none: the key holds a {} that is no count\n", type);
  }
  fmt::print("subscribers   {} client(s) on {} (waiters listen there)\n", subscribers, channel);
}

}  // namespace redisync::cli
