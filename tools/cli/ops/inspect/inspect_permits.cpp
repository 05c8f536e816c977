// redisync inspect on a semaphore: Redisson's (a string: the permits free, and who listens), or
// leased permits (a hash with 'permits'): the permits in all and free, each holder with its
// permits, fencing token and lease left by the server's clock, and who listens.

#include "cli/ops/inspect/inspect.hpp"
#include "cli/common/json_text.hpp"
#include "cli/ops/inspect/permits_state.hpp"

#include "primitives/permits/protocol.hpp"
#include "primitives/semaphore/acquire.hpp"

#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <fmt/core.h>

#include <iostream>

namespace redisync::cli {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

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
  auto const state = co_await read_permits_state(c, name);
  if (as_json) {
    std::cout << json_text(state) << std::endl;
    co_return;
  }
  fmt::print("permits       {} (leased)\n", name);
  fmt::print("node          {}\n", std::string_view{state.at("node").as_string()});
  fmt::print("permits       {} in all, {} free\n", state.at("permits").as_int64(), state.at("permits_free").as_int64());
  for (auto const& holder : state.at("holders").as_array()) {
    auto const& o = holder.as_object();
    fmt::print("holder        {} ({} permit(s), token {}, lease left {} ms{})\n", std::string_view{o.at("permit").as_string()},
               o.at("permits").as_int64(), std::string_view{o.at("token").as_string()}, o.at("lease_left_ms").as_int64(),
               o.at("lease_left_ms").as_int64() == 0 ? ": ended, free for the next acquire" : "");
  }
  if (auto const queued = state.at("fair_queue").as_int64(); queued > 0) {
    fmt::print("fair queue    {} waiter(s)\n", queued);
  }
  fmt::print("subscribers   {} client(s) on {} (waiters listen there)\n", state.at("subscribers").as_int64(),
             detail::permits_protocol::channel_of(name));
}

}  // namespace

asio::awaitable<bool> inspect_semaphore(client& c, std::string const& name, std::string_view type, bool as_json) {
  if (type == "string") {
    co_await redisson_semaphore(c, name, as_json);
    co_return true;
  }
  if (type != "hash") co_return false;
  bool const leased = co_await is_leased_permits(c, name);  // not awaited in a condition: GCC 12
  if (!leased) co_return false;
  co_await leased_permits(c, name, as_json);
  co_return true;
}

}  // namespace redisync::cli
