#pragma once

// Sends script calls through the router, and loads a script that a node is missing once: the first
// caller that meets NOSCRIPT on a node starts one SCRIPT LOAD, the others wait for it, and then all
// send EVALSHA again. Nothing is loaded ahead: a reconnect to a server that kept its scripts costs
// no load, and one that lost them (a restart, a promoted replica) costs one per script in use.

#include "script/script.hpp"

#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace redisync::detail {

class script_runner {
 public:
  // `anchor` keeps the client alive while a load is pending.
  // `sharded`: scripts that publish do it with SPUBLISH (a cluster's channels).
  script_runner(routing::router& r, std::function<std::shared_ptr<void>()> anchor, bool sharded = false)
      : router_{r}, anchor_{std::move(anchor)}, sharded_{sharded} {}

  routing::router& router() noexcept { return router_; }

  // Sends `out`, a call of `s`, to the node of `slot`.
  void send(script const& s, routing::slot_type slot, io::outgoing out, io::late_reply_handler late,
            boost::asio::any_completion_handler<void(io::error_code, io::response)> handler);

  // After a NOSCRIPT reply for `s` from the node of `slot`: runs `then` once the node has the
  // script, or with the error that kept it from loading.
  void when_loaded(script const& s, routing::slot_type slot, std::function<void(io::error_code)> then);
  // SCRIPT LOAD commands sent so far (any thread).
  std::uint64_t loads_sent() const noexcept { return loads_sent_.load(std::memory_order_relaxed); }

 private:
  // Per node: the loads on their way, with the callers that wait for each.
  using loads = std::unordered_map<script const*, std::vector<std::function<void(io::error_code)>>>;
  loads& loading(routing::node_id id);
  // Sends SCRIPT LOAD of `s` to the node of `slot`; its outcome goes to the waiters of `node_id`.
  void load(script const& s, routing::slot_type slot, routing::node_id node_id);

  routing::router& router_;
  std::function<std::shared_ptr<void>()> anchor_;
  bool sharded_;
  std::vector<loads> nodes_;
  std::atomic<std::uint64_t> loads_sent_{0};
};


// Runs `s` with `args` on the node of `slot` and returns its reply, or a typed error for a
// transport failure or a server error reply (the reply then holds the server's text).
boost::asio::awaitable<std::tuple<io::error_code, resp::value>> run_script(
    script_runner& runner, script const& s, routing::slot_type slot, script_args const& args,
    io::late_reply_handler late = {}, resp::request::options opts = {});

// run_script for a call that answers an integer: any other reply is error::unexpected_reply.
boost::asio::awaitable<std::tuple<io::error_code, std::int64_t>> run_script_for_integer(
    script_runner& runner, script const& s, routing::slot_type slot, script_args const& args);

}  // namespace redisync::detail
