#pragma once

// One multiplexed RESP3 connection to one Redis node: the coroutines around the multiplexer. `run`
// connects, performs the handshake, reads, writes, checks health, reconnects with backoff and
// re-subscribes. `exec` may be called from any thread; everything else runs on the connection's
// strand. Server pushes and reconnects go to the event sinks given at construction.

#include <redisync/config.hpp>
#include <redisync/event.hpp>
#include <redisync/error.hpp>

#include "io/multiplexer.hpp"

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <boost/asio/awaitable.hpp>

#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace redisync::detail::io {

struct connection_stats {
  std::uint64_t connects = 0;  // successful handshakes
  std::uint64_t connect_attempts = 0;
  std::uint64_t writes = 0;  // socket writes (each may carry many requests)
  std::uint64_t requests_written = 0;
  std::uint64_t reply_spin_hits = 0;    // replies read while polling (config::reply_spin)
  std::uint64_t reply_spin_misses = 0;  // polls that gave up and slept
  std::uint64_t health_pings = 0;

  // The figures of several connections (a cluster's nodes), summed.
  connection_stats& operator+=(connection_stats const& o) noexcept {
    connects += o.connects;
    connect_attempts += o.connect_attempts;
    writes += o.writes;
    requests_written += o.requests_written;
    reply_spin_hits += o.reply_spin_hits;
    reply_spin_misses += o.reply_spin_misses;
    health_pings += o.health_pings;
    return *this;
  }
};

class connection_group;

// Where a connection goes and what it expects there: one server's defaults, or what a router sets
// for a node of a cluster or a Sentinel's master.
struct node_options {
  // Channels of the node's slots: SSUBSCRIBE / SUNSUBSCRIBE, one channel per command (a cluster's
  // sharded pub/sub names channels of one slot at a time).
  bool sharded_pubsub = false;
  // The handshake asks ROLE and fails unless the server is a master (a Sentinel's answer may be
  // stale: a demoted master is still reachable).
  bool must_be_master = false;
  // Asked before each connect attempt for the address to use (a Sentinel's answer); empty: the
  // config's host and port. An error fails the attempt, which is retried with backoff.
  std::function<boost::asio::awaitable<std::tuple<error_code, std::string, std::uint16_t>>()> resolve;
};

struct connection_events {
  std::function<void(resp::value const&)> push;  // a push that is not a (un)subscribe confirmation
  std::function<void()> connected;                // after each handshake, first and later ones
  // Connection events (event.hpp): attempts, failures with their step, disconnects, backoff.
  std::function<void(event_kind, event_level, error_code, std::string_view detail)> event;
  // A request whose every reply is a redirect (MOVED, ASK, READONLY): true when the router took
  // it (it then submits it elsewhere with adopt()); false completes it with those replies.
  std::function<bool(entry_ptr const&)> redirect;
  // The server dropped a subscribed channel on its own (an unsolicited sunsubscribe: its slot
  // moved); it is no longer in this connection's set.
  std::function<void(std::string const&)> channel_dropped;
  // The connection failed to connect, or lost its session.
  std::function<void()> down;
};

class connection {
  struct impl;

 public:
  using executor_type = boost::asio::any_io_executor;

  connection(executor_type ex, config cfg, connection_events events = {}, node_options node = {});
  // One of the connections of `group`, on its strand. `cfg`'s host and port say where it goes.
  connection(std::shared_ptr<connection_group> group, config cfg, connection_events events, node_options node);
  ~connection();
  connection(connection const&) = delete;
  connection& operator=(connection const&) = delete;

  // The strand all of the connection's state lives on.
  executor_type get_executor() const noexcept;
  // The executor under the strand. Sockets and timers are made with it, which keeps work tracking
  // cheap; their completions still run on the strand, because the coroutines that await them run
  // there or their handlers are bound to it.
  executor_type io_executor() const noexcept;

  // Completes when the connection stops for good: error::auth_failed (or another fatal handshake
  // error) or operation_aborted after stop() or cancellation.
  template <class Token>
  auto run(Token&& token) {
    return boost::asio::async_initiate<Token, void(error_code)>(
        [this](auto handler) {
          start_run(boost::asio::any_completion_handler<void(error_code)>{std::move(handler)});
        },
        token);
  }

  // Sends `out` and completes with one reply per command (server errors are replies). From the
  // strand itself it is queued, and written if the socket is idle, at once.
  void exec(outgoing out, late_reply_handler late,
            boost::asio::any_completion_handler<void(error_code, response)> handler);

  template <class Token>
  auto exec(resp::request req, Token&& token) {
    return exec(std::move(req), late_reply_handler{}, std::forward<Token>(token));
  }

  template <class Token>
  auto exec(resp::request req, late_reply_handler late, Token&& token) {
    return boost::asio::async_initiate<Token, void(error_code, response)>(
        [this](auto handler, resp::request r, late_reply_handler l) {
          exec(outgoing::from(std::move(r)), std::move(l),
               boost::asio::any_completion_handler<void(error_code, response)>{std::move(handler)});
        },
        token, std::move(req), std::move(late));
  }

  // Subscribes to (or unsubscribes from) channels; completes when Redis has confirmed every one.
  // Subscribed channels are subscribed again after each reconnect until unsubscribed.
  void subscribe(bool on, std::vector<std::string> channels,
                 boost::asio::any_completion_handler<void(error_code)> handler);

  template <class Token>
  auto subscribe(std::vector<std::string> channels, Token&& token) {
    return initiate_subscription(true, std::move(channels), std::forward<Token>(token));
  }
  template <class Token>
  auto unsubscribe(std::vector<std::string> channels, Token&& token) {
    return initiate_subscription(false, std::move(channels), std::forward<Token>(token));
  }

  // The group this connection is one of: its strand, held writes, arrivals, completions.
  connection_group& group() const noexcept;

  // A weak reference for callbacks that may outlive the connection (another connection's events):
  // once it is gone, its calls do nothing.
  class handle {
   public:
    // See connection::reconnect.
    void reconnect(std::string why) const;
    // See connection::address; empty once the connection is gone.
    std::string address() const;
    // See connection::adopt; false (`e` untouched) once the connection is gone.
    bool adopt(entry_ptr& e, bool asking) const;

   private:
    friend class connection;
    std::weak_ptr<impl> impl_;
  };
  handle weak() const;

  // Strand only. Takes over `e`, redirected here by the router from another connection (ASK:
  // `asking` sends ASKING before it). It waits for this connection as a new request would.
  void adopt(entry_ptr e, bool asking);
  // Strand only. The requests not yet written (or paused to be written again), handed over to be
  // sent elsewhere (their node's slots moved).
  std::vector<entry_ptr> take_queued();
  // Strand only. Drops `channel` from the set subscribed again after each reconnect, without a
  // command (the node no longer serves its slot, or is gone).
  void forget_channel(std::string const& channel);
  // From any thread: closes the current session, if any; run() connects again (asking `resolve`
  // where to, say). Requests made after it wait for the new session. `why` is told with the
  // `disconnected` event.
  void reconnect(std::string why);

  // Ends run(): closes the socket and fails waiting requests with operation_aborted.
  void stop();

  bool is_ready() const noexcept;  // handshake done and the socket is up
  connection_stats stats() const noexcept;
  // Why the last attempt to connect failed ("127.0.0.1:1: connect: Connection refused"); empty
  // once one succeeds. Readable from any thread.
  std::string last_failure() const;
  // "host:port" it connects to (a Sentinel's answer, once asked). Readable from any thread.
  std::string address() const;

 private:
  void start_run(boost::asio::any_completion_handler<void(error_code)> h);

  template <class Token>
  auto initiate_subscription(bool on, std::vector<std::string> channels, Token&& token) {
    return boost::asio::async_initiate<Token, void(error_code)>(
        [this, on](auto handler, std::vector<std::string> c) {
          subscribe(on, std::move(c), boost::asio::any_completion_handler<void(error_code)>{std::move(handler)});
        },
        token, std::move(channels));
  }

  std::shared_ptr<impl> impl_;
};

// The first server error among the replies as a typed code, or success.
error_code check_replies(response const& replies) noexcept;

}  // namespace redisync::detail::io
