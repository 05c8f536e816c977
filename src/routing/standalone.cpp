#include "routing/standalone.hpp"

namespace redisync::detail::routing {

namespace {

io::connection_events to_node_events(router_events events, std::function<bool(io::entry_ptr const&)> redirect) {
  io::connection_events out;
  out.redirect = std::move(redirect);
  out.push = std::move(events.push);
  out.event = std::move(events.event);
  if (events.connected) out.connected = [f = std::move(events.connected)] { f(0); };
  return out;
}

}  // namespace

standalone::standalone(io::connection::executor_type ex, config cfg, router_events events, io::node_options node,
                       std::function<bool(io::entry_ptr const&)> redirect)
    : conn_{std::move(ex), std::move(cfg), to_node_events(std::move(events), std::move(redirect)), std::move(node)} {}

void standalone::exec(slot_type, io::outgoing out, io::late_reply_handler late,
                      boost::asio::any_completion_handler<void(io::error_code, io::response)> handler) {
  conn_.exec(std::move(out), std::move(late), std::move(handler));
}

void standalone::subscribe(bool on, slot_type, std::vector<std::string> channels,
                           boost::asio::any_completion_handler<void(io::error_code)> handler) {
  conn_.subscribe(on, std::move(channels), std::move(handler));
}

void standalone::run(boost::asio::any_completion_handler<void(io::error_code)> handler) {
  conn_.run(std::move(handler));
}

void standalone::stop() { conn_.stop(); }

}  // namespace redisync::detail::routing
