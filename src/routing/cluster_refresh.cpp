// The cluster's slot map kept up to date: CLUSTER SHARDS asked of a node that answers (the one a
// MOVED named first), read by cluster_map's steps, and applied: new masters connected, requests
// and channels moved to where their slots went, nodes no longer masters retired.

#include "routing/cluster.hpp"

#include "address.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/core.h>

#include <algorithm>

namespace redisync::detail::routing {

namespace asio = boost::asio;
using io::error_code;
using namespace asio::experimental::awaitable_operators;

namespace {

// A node that does not answer CLUSTER SHARDS within this is passed over for the next.
constexpr std::chrono::milliseconds shards_timeout{1000};
// Loads of the map that wait for the node a MOVED named to connect, at most.
constexpr unsigned informed_patience = 12;

}  // namespace

void cluster::want_refresh(std::chrono::milliseconds after) {
  auto const at = io::clock_type::now() + after;
  if (refresh_at_ && *refresh_at_ <= at) return;
  refresh_at_ = at;
  if (!refreshing_) refresh_timer_.expires_at(at);  // wakes the loop, which waits for it
}

asio::awaitable<void> cluster::refresh_loop() {
  auto const self = shared_from_this();
  while (!stopping_) {
    refresh_timer_.expires_at(refresh_at_.value_or(io::clock_type::time_point::max()));
    co_await refresh_timer_.async_wait(asio::as_tuple(asio::deferred));
    if (stopping_) break;
    if (!refresh_at_ || io::clock_type::now() < *refresh_at_) continue;
    refresh_at_.reset();
    refreshing_ = true;
    auto shards = co_await load_shards();
    refreshing_ = false;
    if (stopping_) break;
    bool complete = shards.has_value();
    if (shards) apply(*shards);
    settle_awaiting_map();
    for (auto& e : std::exchange(parked_, {})) route_to_its_slot(std::move(e));
    for (auto& f : std::exchange(after_refresh_, {})) std::move(f)();
    for (auto const& n : nodes_) {
      if (n->master && !(n->conn && n->conn->is_ready())) complete = false;
    }
    if (!complete) want_refresh(refresh_retry);
  }
}

// CLUSTER SHARDS from the first node that answers: masters first, then any other connected node;
// with none connected, the known nodes are connected to for the next try.
asio::awaitable<std::optional<std::vector<shard>>> cluster::load_shards() {
  std::vector<std::pair<node_id, std::shared_ptr<io::connection>>> asked;
  // The node a MOVED named alone, once connected: it has taken the slot, and others may not have
  // heard yet (their stale answer would send requests back to where the MOVED came from).
  if (informed_ != no_node && ++informed_tries_ > informed_patience) informed_ = no_node;
  if (informed_ != no_node) {
    if (!nodes_[informed_]->conn) start_node(informed_);
    if (!nodes_[informed_]->conn->is_ready()) co_return std::nullopt;
    asked.emplace_back(informed_, nodes_[informed_]->conn);
  }
  for (int pass = 0; pass < 2 && informed_ == no_node; ++pass) {
    for (node_id id = 0; id < nodes_.size(); ++id) {
      auto const& n = *nodes_[id];
      if (n.master == (pass == 0) && n.conn && n.conn->is_ready()) asked.emplace_back(id, n.conn);
    }
  }
  if (asked.empty()) {
    // Their connections say why, if they fail.
    for (node_id id = 0; id < nodes_.size(); ++id) {
      if (!nodes_[id]->conn) start_node(id);
    }
    co_return std::nullopt;
  }
  for (auto const& [id, conn] : asked) {
    resp::request req;
    req.push("CLUSTER", "SHARDS");
    req.opts().wait_for_connection = false;
    auto ask = [](std::shared_ptr<io::connection> c, resp::request r) -> asio::awaitable<std::tuple<error_code, io::response>> {
      co_return co_await c->exec(std::move(r), asio::as_tuple(asio::use_awaitable));
    };
    auto timeout = [](asio::any_io_executor ex) -> asio::awaitable<void> {
      asio::steady_timer timer{ex, shards_timeout};
      co_await timer.async_wait(asio::as_tuple(asio::deferred));
    };
    auto outcome = co_await (ask(conn, std::move(req)) || timeout(group_->io_executor()));
    std::string const where = address_text(nodes_[id]->at);
    if (outcome.index() == 1) {
      set_map_failure(where + ": CLUSTER SHARDS: no answer within 1 s");
      continue;
    }
    auto const& [ec, replies] = std::get<0>(outcome);
    if (ec || replies.size() != 1) {
      set_map_failure(fmt::format("{}: CLUSTER SHARDS: {}", where, ec ? ec.message() : "no reply"));
      continue;
    }
    auto answer = read_shards(replies.front(), cfg_.tls, nodes_[id]->at.host);
    if (answer.shards.empty()) {
      set_map_failure(fmt::format("{}: CLUSTER SHARDS: {}", where, answer.failure));
      if (answer.not_a_cluster) {
        // It will not become one: the client stops and says so.
        run_error_ = error::handshake_failed;
        if (events_.event) events_.event(event_kind::connect_failed, event_level::error, error::handshake_failed, last_failure());
        stop();
        co_return std::nullopt;
      }
      continue;
    }
    set_map_failure({});
    informed_ = no_node;
    co_return std::move(answer.shards);
  }
  co_return std::nullopt;
}

void cluster::apply(std::vector<shard> const& shards) {
  std::vector<node_id> masters;
  for (auto const& s : shards) masters.push_back(find_or_add(s.master));
  bool changed = false;
  {
    std::lock_guard const lock{nodes_mutex_};
    changed = map_.update(shards, masters);
  }
  if (changed && events_.master_changed) events_.master_changed();
  for (node_id id = 0; id < nodes_.size(); ++id) {
    nodes_[id]->master = std::ranges::find(masters, id) != masters.end();
    if (nodes_[id]->master && !nodes_[id]->conn) start_node(id);
  }
  // Requests that wait on a node for a slot it no longer serves go to the slot's node now.
  for (node_id id = 0; id < nodes_.size(); ++id) {
    auto const conn = nodes_[id]->conn;
    if (!conn) continue;
    for (auto& e : conn->take_queued()) route_to_its_slot(std::move(e));
  }
  for (node_id id = 0; id < nodes_.size(); ++id) {
    if (!nodes_[id]->master) retire(id);
  }
  reconcile_channels();
}

void cluster::set_map_failure(std::string text) {
  std::lock_guard const lock{nodes_mutex_};
  map_failure_ = std::move(text);
}

}  // namespace redisync::detail::routing
