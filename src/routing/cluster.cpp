#include "routing/cluster.hpp"

#include "address.hpp"
#include "io/pending_handler.hpp"
#include "routing/hash_slot.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>

namespace redisync::detail::routing {

namespace asio = boost::asio;
using io::error_code;

namespace {

// A request or subscription redirected again waits this long times its redirects for the map.
constexpr std::chrono::milliseconds redirect_pause{25};

}  // namespace

std::shared_ptr<cluster> cluster::create(io::connection::executor_type ex, config cfg, router_events events) {
  auto c = std::make_shared<cluster>(private_tag{}, std::move(ex), std::move(cfg), std::move(events));
  // The first seed is asked for the map (any node answers, a replica too); requests wait for it.
  for (auto const& seed : c->cfg_.seed_nodes()) c->find_or_add(seed);
  c->start_node(0);
  return c;
}

cluster::cluster(private_tag, io::connection::executor_type ex, config cfg, router_events events)
    : cfg_{std::move(cfg)},
      events_{std::move(events)},
      group_{io::connection_group::make(std::move(ex))},
      refresh_timer_{group_->io_executor()} {}

cluster::~cluster() {
  for (auto const& n : nodes_) {
    if (n->conn) n->conn->stop();
  }
}

slot_type cluster::slot_of(std::string_view key) const noexcept { return hash_slot(key); }

bool cluster::connected(slot_type slot) const noexcept {
  if (map_.node_of(slot) == no_node) return false;
  auto const& n = *nodes_[map_.node_of(slot)];
  return n.conn && n.conn->is_ready();
}

io::connection& cluster::conn_of(slot_type slot) {
  node_id const id = map_.node_of(slot);
  if (!nodes_[id]->conn) start_node(id);
  return *nodes_[id]->conn;
}

// A request or subscription for a slot whose master is not known yet (the map is loading): it
// waits for the map, as a request waits for its connection, and fails with not_connected when
// `wait` (its connection wait) runs out first. Nothing goes to a node that may be a replica.
void cluster::await_map(std::chrono::milliseconds wait, asio::any_completion_handler<void(bool)> go) {
  awaiting_map_.push_back({io::clock_type::now() + std::min(wait, cfg_.connection_wait_limit), std::move(go)});
  want_refresh(std::chrono::milliseconds{0});
}

// After a load of the map: those whose slot is known now go on (a slot still unknown waits again),
// those whose wait ran out fail.
void cluster::settle_awaiting_map() {
  auto const now = io::clock_type::now();
  for (auto& a : std::exchange(awaiting_map_, {})) {
    if (!map_.known() && now < a.until) {
      awaiting_map_.push_back(std::move(a));
      continue;
    }
    std::move(a.go)(map_.known());
  }
}

node_id cluster::find_or_add(node_address const& at) {
  for (node_id id = 0; id < nodes_.size(); ++id) {
    if (nodes_[id]->at == at) return id;
  }
  std::lock_guard const lock{nodes_mutex_};
  nodes_.push_back(std::make_unique<node>(node{at, nullptr, false}));
  return static_cast<node_id>(nodes_.size() - 1);
}

void cluster::start_node(node_id id) {
  auto weak = weak_from_this();
  io::connection_events ev;
  ev.push = events_.push;
  ev.event = events_.event;
  ev.connected = [weak, id] {
    auto self = weak.lock();
    if (!self) return;
    // A node back after a failure may have been promoted or demoted meanwhile.
    self->want_refresh(std::chrono::milliseconds{0});
    if (self->events_.connected) self->events_.connected(id);
  };
  ev.redirect = [weak, id](io::entry_ptr const& e) {
    auto self = weak.lock();
    return self && self->on_redirect(id, e);
  };
  ev.channel_dropped = [weak](std::string const& channel) {
    auto self = weak.lock();
    if (!self) return;
    if (auto it = self->channels_.find(channel); it != self->channels_.end()) {
      it->second = no_node;  // subscribed again where the map says, once it was loaded again
      self->want_refresh(std::chrono::milliseconds{0});
    }
  };
  ev.down = [weak] {
    if (auto self = weak.lock()) self->want_refresh(refresh_retry);
  };
  auto conn = std::make_shared<io::connection>(group_, cfg_.for_node(nodes_[id]->at), std::move(ev),
                                               io::node_options{.sharded_pubsub = true, .must_be_master = false, .resolve = {}});
  {
    std::lock_guard const lock{nodes_mutex_};
    nodes_[id]->conn = conn;
  }
  if (running_ && !stopping_) {
    ++nodes_running_;
    conn->run(asio::bind_executor(group_->executor(), [weak](error_code ec) {
      if (auto self = weak.lock()) self->end_node_run(ec);
    }));
  }
}

void cluster::retire(node_id id) {
  auto& n = *nodes_[id];
  if (!n.conn) return;
  auto conn = n.conn;
  {
    std::lock_guard const lock{nodes_mutex_};
    n.conn.reset();
  }
  for (auto& e : conn->take_queued()) route_to_its_slot(std::move(e));
  conn->stop();
}

void cluster::route(io::entry_ptr e, node_id to, bool asking) {
  if (to == no_node) {
    // Its slot lost its master in the map (a load during a failover): it waits for the next.
    parked_.push_back(std::move(e));
    want_refresh(refresh_retry);
    return;
  }
  if (!nodes_[to]->conn) start_node(to);
  nodes_[to]->conn->adopt(std::move(e), asking);
}

// The slot is read before the entry moves (an argument's order of evaluation is unspecified).
void cluster::route_to_its_slot(io::entry_ptr e) {
  node_id const to = map_.node_of(e->out.merge.slot);
  route(std::move(e), to, false);
}

void cluster::exec(slot_type slot, io::outgoing out, io::late_reply_handler late,
                   asio::any_completion_handler<void(error_code, io::response)> handler) {
  out.merge.slot = slot;  // where it goes again, if its node's slots move while it waits
  if (!group_->on_strand()) {
    // The map lives on the strand.
    asio::post(group_->executor(), [self = shared_from_this(), slot, out = std::move(out), late = std::move(late),
                                    handler = std::move(handler)]() mutable {
      self->exec(slot, std::move(out), std::move(late), std::move(handler));
    });
    return;
  }
  if (map_.node_of(slot) != no_node) return conn_of(slot).exec(std::move(out), std::move(late), std::move(handler));
  if (!out.opts.wait_for_connection) {
    return fail_unsent(std::move(handler), error::not_connected);
  }
  auto const wait = out.opts.connection_wait.value_or(cfg_.connection_wait_limit);
  await_map(wait, [self = shared_from_this(), slot, out = std::move(out), late = std::move(late),
                   handler = std::move(handler)](bool known) mutable {
    if (!known) return self->fail_unsent(std::move(handler), error::not_connected);
    self->exec(slot, std::move(out), std::move(late), std::move(handler));
  });
}

// Completes a request that was never sent, off the current call.
void cluster::fail_unsent(asio::any_completion_handler<void(error_code, io::response)> handler, error e) {
  // Where a connection completes its requests (io::connection's homes).
  completion_homes const homes{group_->executor(), group_->executor(), group_->completions()};
  pending_handler<void(error_code, io::response)> h{std::move(handler), homes};
  asio::post(group_->executor(), [h = std::move(h), e]() mutable { h.complete(e, {}); });
}

// MOVED: the slot's owner changed (the map is loaded again too); ASK: this one command goes to the
// importing node, after ASKING; READONLY: a replica answered, the map is stale.
bool cluster::on_redirect(node_id from, io::entry_ptr const& e) {
  std::string_view const text = e->replies.front().text();
  auto const code = error_from_server_text(text);
  if (code == error::read_only) {
    parked_.push_back(e);
    want_refresh(std::chrono::milliseconds{0});
    return true;
  }
  if (code == error::try_again) {
    // Sent on by ASK, the request found only some of its keys on the importing node: the slot's
    // owner says again where they are, after a pause, until the request's time is up.
    if (io::clock_type::now() >= e->retry_deadline) return false;
    parked_.push_back(e);
    want_refresh(redirect_pause * e->redirects);
    return true;
  }
  auto const redirect = read_redirect(text, nodes_[from]->at);
  if (!redirect) return false;
  node_id const id = find_or_add(redirect->to);
  if (!redirect->ask) {
    bool changed = false;
    {
      std::lock_guard const lock{nodes_mutex_};
      changed = map_.move(redirect->slot, id);
    }
    if (changed && events_.master_changed) events_.master_changed();
    informed_ = id;
    informed_tries_ = 0;
    want_refresh(std::chrono::milliseconds{0});
  }
  // A (un)subscription belongs to the connection it went to: it is made again where the map
  // now says (subscribe_on_owner).
  if (e->out.pushes > 0) return false;
  if (e->redirects > 1) {
    // Sent back and forth: nodes disagree while a failover settles or a slot moves. It waits for
    // the map, until the request's time is up.
    if (io::clock_type::now() >= e->retry_deadline) return false;
    parked_.push_back(e);
    want_refresh(redirect_pause * e->redirects);
    return true;
  }
  route(e, id, redirect->ask);
  return true;
}

void cluster::subscribe(bool on, slot_type slot, std::vector<std::string> channels,
                        asio::any_completion_handler<void(error_code)> handler) {
  subscribe_on_owner(on, slot, std::move(channels), std::move(handler), 0);
}

// A subscription that met MOVED or ASK (the slot moved, the map is stale) or CLUSTERDOWN is made
// again on the slot's node once the map was loaded again, a few times at most.
void cluster::subscribe_on_owner(bool on, slot_type slot, std::vector<std::string> channels,
                                 asio::any_completion_handler<void(error_code)> handler, unsigned attempt) {
  if (on && map_.node_of(slot) == no_node) {
    auto again = [self = shared_from_this(), slot, channels = std::move(channels), handler = std::move(handler),
                  attempt](bool known) mutable {
      if (!known) return std::move(handler)(error_code{error::not_connected});
      self->subscribe_on_owner(true, slot, std::move(channels), std::move(handler), attempt);
    };
    return await_map(cfg_.connection_wait_limit, std::move(again));
  }
  // Unsubscribed where it was subscribed, which may be the slot's former node.
  node_id id = map_.node_of(slot);
  for (auto const& c : channels) {
    if (on) {
      channels_[c] = id;
    } else if (auto it = channels_.find(c); it != channels_.end()) {
      if (it->second != no_node) id = it->second;
      channels_.erase(it);
    }
  }
  if (id == no_node) {  // never subscribed anywhere
    return asio::post(group_->executor(), [h = std::move(handler)]() mutable { std::move(h)(error_code{}); });
  }
  if (!nodes_[id]->conn) start_node(id);
  if (!on) return nodes_[id]->conn->unsubscribe(std::move(channels), std::move(handler));
  auto retry = [weak = weak_from_this(), slot, channels, handler = std::move(handler), attempt](error_code ec) mutable {
    auto self = weak.lock();
    bool const elsewhere = ec == error::moved || ec == error::ask || ec == error::cluster_down ||
                           ec == error::try_again || ec == error::read_only;
    if (!self || !elsewhere || attempt + 1 >= io::multiplexer::max_redirects || self->stopping_) {
      return std::move(handler)(ec);
    }
    self->after_refresh_.emplace_back([self, slot, channels = std::move(channels), handler = std::move(handler),
                                       attempt]() mutable {
      self->subscribe_on_owner(true, slot, std::move(channels), std::move(handler), attempt + 1);
    });
    self->want_refresh(redirect_pause * (attempt + 1));
  };
  nodes_[id]->conn->subscribe(std::move(channels), asio::bind_executor(group_->executor(), std::move(retry)));
}

// Channels whose slot is now served by another node (or whose node dropped them) are subscribed
// there, and its waiters woken: a message may have been missed while they moved.
void cluster::reconcile_channels() {
  for (auto& [channel, on] : channels_) {
    node_id const owner = map_.node_of(hash_slot(channel));
    if (owner == on || owner == no_node) continue;
    if (on != no_node && nodes_[on]->conn) nodes_[on]->conn->forget_channel(channel);
    on = owner;
    if (!nodes_[owner]->conn) start_node(owner);
    auto weak = weak_from_this();
    nodes_[owner]->conn->subscribe(true, {channel}, asio::bind_executor(group_->executor(), [weak, owner](error_code ec) {
      auto self = weak.lock();
      if (self && !ec && self->events_.connected) self->events_.connected(owner);
    }));
  }
}

void cluster::run(asio::any_completion_handler<void(error_code)> handler) {
  asio::post(group_->executor(), [self = shared_from_this(), handler = std::move(handler)]() mutable {
    if (self->running_) {
      auto ex = asio::get_associated_executor(handler, self->group_->io_executor());
      asio::dispatch(ex, [h = std::move(handler)]() mutable { std::move(h)(error::invalid_argument); });
      return;
    }
    self->running_ = true;
    self->run_handler_.emplace(std::move(handler));
    for (node_id id = 0; id < self->nodes_.size(); ++id) {
      auto const& n = *self->nodes_[id];
      if (!n.conn) continue;
      ++self->nodes_running_;
      n.conn->run(asio::bind_executor(self->group_->executor(), [weak = self->weak_from_this()](error_code ec) {
        if (auto s = weak.lock()) s->end_node_run(ec);
      }));
    }
    self->want_refresh(std::chrono::milliseconds{0});
    asio::co_spawn(self->group_->executor(), self->refresh_loop(), asio::detached);
  });
}

void cluster::end_node_run(error_code ec) {
  --nodes_running_;
  bool const fatal = ec == error::auth_failed || ec == error::handshake_failed;
  if (fatal && !stopping_) {
    run_error_ = ec;
    stop();
  }
  if (stopping_ && nodes_running_ == 0) finish_run(run_error_ ? run_error_ : error_code{asio::error::operation_aborted});
}

void cluster::finish_run(error_code ec) {
  if (!run_handler_) return;
  auto handler = std::move(*run_handler_);
  run_handler_.reset();
  auto ex = asio::get_associated_executor(handler, group_->io_executor());
  asio::dispatch(ex, [h = std::move(handler), ec]() mutable { std::move(h)(ec); });
}

void cluster::stop() {
  asio::dispatch(group_->executor(), [self = shared_from_this()] {
    if (self->stopping_) return;
    self->stopping_ = true;
    self->refresh_timer_.cancel();
    for (auto const& n : self->nodes_) {
      if (n->conn) n->conn->stop();
    }
    // Parked requests fail as their node's do.
    for (auto& e : std::exchange(self->parked_, {})) self->route_to_its_slot(std::move(e));
    for (auto& f : std::exchange(self->after_refresh_, {})) std::move(f)();
    for (auto& a : std::exchange(self->awaiting_map_, {})) std::move(a.go)(false);
    if (self->nodes_running_ == 0) self->finish_run(asio::error::operation_aborted);
  });
}

io::connection_stats cluster::stats() const noexcept {
  io::connection_stats sum;
  std::lock_guard const lock{nodes_mutex_};
  for (auto const& n : nodes_) {
    if (!n->conn) continue;
    sum += n->conn->stats();
  }
  return sum;
}

std::string cluster::last_failure() const {
  std::lock_guard const lock{nodes_mutex_};
  std::string out = map_failure_;
  for (auto const& n : nodes_) {
    if (!n->conn) continue;
    if (auto f = n->conn->last_failure(); !f.empty()) out += (out.empty() ? "" : "; ") + f;
  }
  return out;
}

std::string cluster::address_of(slot_type slot) const {
  std::lock_guard const lock{nodes_mutex_};
  if (map_.node_of(slot) == no_node) return {};  // not known yet
  return address_text(nodes_[map_.node_of(slot)]->at);
}

}  // namespace redisync::detail::routing
