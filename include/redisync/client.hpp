#pragma once

// The entry point: one client per Redis deployment and process. It owns the connection, the
// watchdog's timing wheel and the pub/sub subscriptions its waiters share. It is safe to share
// across the threads of an io_context pool: its state lives on its own strand (or its own thread,
// config::own_thread). Every operation completes on the handler's executor, or the client's, as
// if by post: the caller's code never runs inside the client's strand.

#include <redisync/config.hpp>
#include <redisync/error.hpp>
#include <redisync/fenced_write.hpp>
#include <redisync/election.hpp>
#include <redisync/latch.hpp>
#include <redisync/metrics.hpp>
#include <redisync/owner.hpp>
#include <redisync/reply.hpp>
#include <redisync/resp/request.hpp>
#include <redisync/resp/value.hpp>
#include <redisync/script.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace redisync {

// The replies of a request: one per command. Server errors are replies, not failures.
using response = std::vector<resp::value>;

// The first server error among the replies as a typed code, or success.
boost::system::error_code check_replies(response const& replies) noexcept;

class client {
 public:
  using executor_type = boost::asio::any_io_executor;

  // Throws boost::system::system_error (error::invalid_argument) for a configuration out of range,
  // saying which setting.
  client(executor_type ex, config cfg);
  client(executor_type ex, std::string_view url) : client{std::move(ex), config::from_url(url)} {}
  client(boost::asio::io_context& ctx, config cfg) : client{ctx.get_executor(), std::move(cfg)} {}
  client(boost::asio::io_context& ctx, std::string_view url) : client{ctx.get_executor(), config::from_url(url)} {}
  ~client();
  client(client const&) = delete;
  client& operator=(client const&) = delete;

  // Runs the connection until stop() (operation_aborted) or a fatal error such as
  // error::auth_failed. start() runs it in the background instead.
  template <class Token = boost::asio::deferred_t>
  auto run(Token&& token = {}) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
        [core = core_](auto h) {
          start_run(core, boost::asio::any_completion_handler<void(boost::system::error_code)>{std::move(h)});
        },
        token);
  }
  void start();
  // Stops the connection, wakes every waiter (they fail with error::not_connected) and stops the
  // watchdog. Holds are not released: each ends as lost, and its key expires on the server when
  // its lease ends. shutdown() is the graceful way.
  void stop();

  // Ends the client gracefully within `limit`: acquires, waiting or new, fail with
  // error::shutting_down; every hold of this client is released, level by level (holds in
  // parallel); subscriptions no waiter needs are dropped; then the client stops as with stop().
  // Completes with success, or with error::timeout if `limit` ran out first: the client stopped
  // anyway, and the holds not released by then end as lost and expire with their lease.
  template <class Token = boost::asio::deferred_t>
  auto shutdown(std::chrono::milliseconds limit, Token&& token = {}) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
        [core = core_, limit](auto h) {
          start_shutdown(core, limit, boost::asio::any_completion_handler<void(boost::system::error_code)>{std::move(h)});
        },
        token);
  }

  // The client's identity, the first half of every owner id it makes.
  std::string const& id() const noexcept;
  // A fresh owner: `<client id>:<next 64-bit number>`.
  owner new_owner();
  // An owner with an explicit identity, for example one restored after a restart. Throws
  // system_error(error::invalid_argument) for an empty id or one with spaces or control bytes.
  owner make_owner(std::string id);
  // A lock handle with a fresh owner.
  lock make_lock(std::string name) { return new_owner().lock(std::move(name)); }
  // A handle on the count-down latch `name` (latch.hpp), Redisson's RCountDownLatch.
  redisync::latch latch(std::string name) const { return redisync::latch{core_, std::move(name)}; }
  // A handle on the leader election `name` (election.hpp).
  redisync::election election(std::string name) const { return redisync::election{core_, std::move(name)}; }

  // Plain commands, on the same connection as the locks; completes with one reply per command,
  // raw: a server error is a reply (see check_replies), not a failure.
  template <class Token = boost::asio::deferred_t>
  auto exec(resp::request req, Token&& token = {}) {
    using signature = void(boost::system::error_code, response);
    return boost::asio::async_initiate<Token, signature>(
        [core = core_](auto h, resp::request r) {
          start_exec(core, std::move(r), boost::asio::any_completion_handler<signature>{std::move(h)});
        },
        token, std::move(req));
  }

  // Commands whose last reply is read as T (reply.hpp: any integer type, double, strings, ...):
  // fails with the first server error among the replies, or error::unexpected_reply if the last
  // reply is not a T (or a number out of T's range).
  //   auto [ec, stock] = co_await c.query<std::optional<int>>(get_stock, as_tuple(use_awaitable));
  template <reply_type T, class Token = boost::asio::deferred_t>
  auto query(resp::request req, Token&& token = {}) {
    using signature = void(boost::system::error_code, resp::value);
    boost::asio::deferred_t later;
    auto last_reply = boost::asio::async_initiate<boost::asio::deferred_t, signature>(
        [core = core_](auto h, resp::request r) {
          start_query(core, std::move(r), boost::asio::any_completion_handler<signature>{std::move(h)});
        },
        later, std::move(req));
    return std::move(last_reply)(boost::asio::deferred(&read_as<T>))(std::forward<Token>(token));
  }

  // Runs `s` with EVALSHA (script.hpp) on the node of the first key. A server error reply fails
  // with its code, and the value holds the server's text.
  template <class Token = boost::asio::deferred_t>
  auto eval(script const& s, std::vector<std::string> keys, std::vector<std::string> args, Token&& token = {}) {
    using signature = void(boost::system::error_code, resp::value);
    return boost::asio::async_initiate<Token, signature>(
        [core = core_, impl = s.impl_](auto h, std::vector<std::string> k, std::vector<std::string> a) {
          start_eval(core, impl, std::move(k), std::move(a), boost::asio::any_completion_handler<signature>{std::move(h)});
        },
        token, std::move(keys), std::move(args));
  }

  // A fenced write (fenced_write.hpp), braced inline or a named fenced_write; its strings are
  // copied at once. Completes with true if the resource accepted it.
  template <class Token = boost::asio::deferred_t>
  auto fenced_set(fenced_write_view w, Token&& token = {}) {
    using signature = void(boost::system::error_code, bool);
    fenced_write owned{std::string{w.fence_key}, std::string{w.key}, std::string{w.value}, w.token,
                       w.expected ? std::optional<std::string>{*w.expected} : std::nullopt};
    return boost::asio::async_initiate<Token, signature>(
        [core = core_](auto h, fenced_write w) {
          start_fenced_set(core, std::move(w), boost::asio::any_completion_handler<signature>{std::move(h)});
        },
        token, std::move(owned));
  }

  // Unsubscribes every channel that no waiter uses any more instead of letting it linger;
  // completes when Redis has confirmed.
  template <class Token = boost::asio::deferred_t>
  auto flush_subscriptions(Token&& token = {}) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
        [core = core_](auto h) {
          start_flush(core, boost::asio::any_completion_handler<void(boost::system::error_code)>{std::move(h)});
        },
        token);
  }

  // Acquires, waits, holds, losses, renewals, connections and traffic so far (metrics.hpp). Any
  // thread; a snapshot costs a few microseconds.
  metrics_snapshot metrics() const;
  // Why the last attempt to connect failed, naming the address and the step ("127.0.0.1:1:
  // connect: Connection refused"); empty while connected. A request that waited for a connection
  // longer than config::connection_wait_limit failed with error::not_connected: this says why.
  // Readable from any thread.
  std::string last_connect_failure() const;
  // The address ("host:port") of the node that serves `key` as far as the client knows now: the
  // server, a Sentinel's current master, or the cluster node of the key's slot. Any thread.
  std::string node_of(std::string_view key) const;
  // The executor the client was made with: where operations complete whose handler names no
  // executor of its own.
  executor_type get_executor() const noexcept;
  config const& cfg() const noexcept;

 private:
  using core_ptr = std::shared_ptr<detail::sync::client_core>;
  static void start_run(core_ptr const& core, boost::asio::any_completion_handler<void(boost::system::error_code)> h);
  static void start_exec(core_ptr const& core, resp::request req,
                         boost::asio::any_completion_handler<void(boost::system::error_code, response)> h);
  static void start_flush(core_ptr const& core, boost::asio::any_completion_handler<void(boost::system::error_code)> h);
  static void start_shutdown(core_ptr const& core, std::chrono::milliseconds limit,
                             boost::asio::any_completion_handler<void(boost::system::error_code)> h);
  static void start_query(core_ptr const& core, resp::request req,
                          boost::asio::any_completion_handler<void(boost::system::error_code, resp::value)> h);
  template <reply_type T>
  static auto read_as(boost::system::error_code ec, resp::value const& reply) {
    T out{};
    if (!ec) {
      if (auto r = read_reply<T>(reply)) {
        out = std::move(*r);
      } else {
        ec = r.error();
      }
    }
    return boost::asio::deferred.values(ec, std::move(out));
  }
  static void start_eval(core_ptr const& core, std::shared_ptr<detail::user_script const> const& s,
                         std::vector<std::string> keys, std::vector<std::string> args,
                         boost::asio::any_completion_handler<void(boost::system::error_code, resp::value)> h);
  static void start_fenced_set(core_ptr const& core, fenced_write w,
                               boost::asio::any_completion_handler<void(boost::system::error_code, bool)> h);

  core_ptr core_;
};

}  // namespace redisync
