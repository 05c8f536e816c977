#include "routing/sentinel_answer.hpp"

#include "address.hpp"

#include <fmt/core.h>

namespace redisync::detail::routing {

sentinel_question ask_sentinel(config const& sentinel_cfg, std::string const& master_name) {
  sentinel_question q;
  q.auth = !sentinel_cfg.password.empty();
  if (q.auth && sentinel_cfg.username.empty()) q.request.push("AUTH", sentinel_cfg.password);
  if (q.auth && !sentinel_cfg.username.empty()) q.request.push("AUTH", sentinel_cfg.username, sentinel_cfg.password);
  q.request.push("SENTINEL", "GET-MASTER-ADDR-BY-NAME", master_name);
  q.request.push("SENTINEL", "SENTINELS", master_name);
  q.replies = q.auth ? 3 : 2;
  return q;
}

sentinel_answer read_sentinel_answer(sentinel_question const& q, std::vector<resp::value> const& replies,
                                     std::string_view master_name) {
  sentinel_answer out;
  if (replies.size() != q.replies) {
    out.failure = fmt::format("{} replies, not {}", replies.size(), q.replies);
    return out;
  }
  if (q.auth && replies[0].is_error()) {
    out.failure = fmt::format("AUTH refused: {}", replies[0].text());
    return out;
  }
  auto const& master = replies[q.auth ? 1 : 0];
  if (master.is_error()) {
    out.failure = fmt::format("{} (is it a Sentinel?)", master.text());
    return out;
  }
  auto const e = master.elements();
  if (master.is_null() || e.size() != 2 || !e[0].is_string() || !e[1].is_string()) {
    out.failure = fmt::format("it knows no master named '{}'", master_name);
    return out;
  }
  auto const port = parse_port(e[1].text());
  if (!port) {
    out.failure = fmt::format("it named the port '{}'", e[1].text());
    return out;
  }
  out.master = node_address{std::string{e[0].text()}, *port};
  for (auto const& other : replies[q.auth ? 2 : 1].elements()) {
    if (auto const p = parse_port(other.field_text("port")); p && !other.field_text("ip").empty()) {
      out.others.push_back({std::string{other.field_text("ip")}, *p});
    }
  }
  return out;
}

bool announces_new_master(resp::value const& push, std::string_view master_name) {
  // ["message", "+switch-master", "<name> <old ip> <old port> <new ip> <new port>"]
  auto const e = push.elements();
  if (e.size() != 3 || !e[2].is_string()) return false;
  std::string_view const text = e[2].text();
  return text.substr(0, text.find(' ')) == master_name;
}

}  // namespace redisync::detail::routing
