#include "script/runner.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/deferred.hpp>

namespace redisync::detail {

namespace asio = boost::asio;
using io::error_code;

script_runner::loads& script_runner::loading(routing::node_id id) {
  if (id >= nodes_.size()) nodes_.resize(id + 1);
  return nodes_[id];
}

void script_runner::send(script const& s, routing::slot_type slot, io::outgoing out,
                         io::late_reply_handler late,
                         asio::any_completion_handler<void(error_code, io::response)> handler) {
  if (sharded_ && s.publishes) append_argument(out, "spublish");
  router_.exec(slot, std::move(out), std::move(late), std::move(handler));
}

void script_runner::when_loaded(script const& s, routing::slot_type slot, std::function<void(error_code)> then) {
  auto const node = router_.node_of(slot);
  auto& waiting = loading(node)[&s];
  waiting.push_back(std::move(then));
  if (waiting.size() == 1) load(s, slot, node);  // else a load is on its way
}

// A load is idempotent: one whose connection dropped before its reply (its outcome unknown) goes
// again once the connection is back, instead of failing everyone who waits for it.
void script_runner::load(script const& s, routing::slot_type slot, routing::node_id node_id) {
  resp::request req;
  req.push("SCRIPT", "LOAD", s.source);
  loads_sent_.fetch_add(1, std::memory_order_relaxed);
  auto on_loaded = [this, anchor = anchor_(), &s, slot, node_id](error_code ec, io::response replies) {
    if (ec == error::ambiguous) return load(s, slot, node_id);
    if (!ec) ec = io::check_replies(replies);
    auto& node_loads = loading(node_id);
    auto waiters = std::move(node_loads[&s]);
    node_loads.erase(&s);
    for (auto& w : waiters) w(ec);
  };
  router_.exec(slot, io::outgoing::from(std::move(req)), {}, std::move(on_loaded));
}

asio::awaitable<std::tuple<error_code, resp::value>> run_script(script_runner& runner, script const& s,
                                                                routing::slot_type slot, script_args const& args,
                                                                io::late_reply_handler late,
                                                                resp::request::options opts) {
  constexpr auto tuple_token = asio::as_tuple(asio::deferred);
  for (script_reloads reloads;;) {
    auto send = [&](auto handler) {
      runner.send(s, slot, script_call(s, slot, args, reloads.by_digest(), opts), late, std::move(handler));
    };
    auto [ec, replies] = co_await asio::async_initiate<decltype(tuple_token), void(error_code, io::response)>(
        send, tuple_token);
    if (!reloads.must_reload(ec, replies)) {
      if (ec) co_return std::tuple{ec, resp::value{}};
      if (replies.size() != 1) co_return std::tuple{error_code{error::unexpected_reply}, resp::value{}};
      resp::value& reply = replies.front();
      if (!reply.is_error()) co_return std::tuple{error_code{}, std::move(reply)};
      co_return std::tuple{server_error_code(reply.text()), std::move(reply)};
    }
    auto wait = [&](auto handler) {
      runner.when_loaded(s, slot, [h = std::make_shared<decltype(handler)>(std::move(handler))](error_code ec) mutable {
        std::move (*h)(ec);
      });
    };
    auto [lec] = co_await asio::async_initiate<decltype(tuple_token), void(error_code)>(wait, tuple_token);
    if (lec) co_return std::tuple{lec, resp::value{}};
  }
}

asio::awaitable<std::tuple<error_code, std::int64_t>> run_script_for_integer(script_runner& runner, script const& s,
                                                                         routing::slot_type slot,
                                                                         script_args const& args) {
  auto [ec, reply] = co_await run_script(runner, s, slot, args);
  if (ec) co_return std::tuple{ec, std::int64_t{0}};
  if (reply.kind() != resp::type::integer) co_return std::tuple{error_code{error::unexpected_reply}, std::int64_t{0}};
  co_return std::tuple{error_code{}, reply.integer()};
}

}  // namespace redisync::detail
