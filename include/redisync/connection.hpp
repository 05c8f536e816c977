#pragma once

// One multiplexed RESP3 connection to one Redis node. `run` owns the socket: it connects, performs
// the handshake, pings when idle, reconnects with backoff and re-subscribes. `exec` may be called
// from any number of coroutines on any thread; queued requests are written together and replies
// are matched in order. Server pushes go to the push handler while commands keep flowing.

#include <redisync/config.hpp>
#include <redisync/detail/pending_handler.hpp>
#include <redisync/error.hpp>
#include <redisync/resp/request.hpp>
#include <redisync/resp/value.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace redisync {

using response = std::vector<resp::value>;

// Receives the replies of a written request whose caller stopped waiting (cancelled), or
// error::ambiguous if the connection dropped before they came, or operation_aborted if the request
// was cancelled before it was written (it never ran). Runs on the connection's strand.
using late_reply_handler = std::function<void(boost::system::error_code, response)>;

// Statistics for tests and benchmarks.
struct connection_stats {
  std::uint64_t connects = 0;         // successful handshakes
  std::uint64_t connect_attempts = 0;
  std::uint64_t writes = 0;           // socket writes (each may carry many requests)
  std::uint64_t requests_written = 0;
  std::uint64_t reply_spin_hits = 0;    // replies read while polling (config::reply_spin)
  std::uint64_t reply_spin_misses = 0;  // polls that gave up and slept
};

class connection {
 public:
  using executor_type = boost::asio::any_io_executor;
  using push_handler = std::function<void(resp::value const&)>;
  using connect_handler = std::function<void()>;

  connection(executor_type ex, config cfg);
  ~connection();
  connection(connection const&) = delete;
  connection& operator=(connection const&) = delete;

  // The strand all of the connection's state lives on.
  executor_type get_executor() const noexcept;
  // The executor under the strand. The connection's sockets and timers (and the client's) are made
  // with it, which keeps work tracking cheap; their completions still run on the strand, because
  // the coroutines that await them run there or their handlers are bound to it.
  executor_type io_executor() const noexcept;
  config const& cfg() const noexcept;

  // Completes when the connection stops for good: error::auth_failed (or another fatal handshake
  // error) or operation_aborted after stop() or cancellation.
  template <class Token = boost::asio::deferred_t>
  auto run(Token&& token = {}) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
        [this](auto handler) {
          start_run(boost::asio::any_completion_handler<void(boost::system::error_code)>{
              std::move(handler)});
        },
        token);
  }

  // Sends a request and completes with one reply per command (server errors are replies, not
  // failures; use check_replies to turn them into codes).
  template <class Token = boost::asio::deferred_t>
  auto exec(resp::request req, Token&& token = {}) {
    return exec(std::move(req), late_reply_handler{}, std::forward<Token>(token));
  }

  template <class Token = boost::asio::deferred_t>
  auto exec(resp::request req, late_reply_handler late, Token&& token = {}) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, response)>(
        [this](auto handler, resp::request r, late_reply_handler l) {
          start_exec(std::move(r), std::move(l),
                     boost::asio::any_completion_handler<void(boost::system::error_code, response)>{
                         std::move(handler)});
        },
        token, std::move(req), std::move(late));
  }

  // Subscribes to channels; completes when Redis has confirmed every one. The channels are
  // subscribed again after each reconnect until unsubscribed.
  template <class Token = boost::asio::deferred_t>
  auto subscribe(std::vector<std::string> channels, Token&& token = {}) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
        [this](auto handler, std::vector<std::string> c) {
          start_subscription(true, std::move(c),
                             boost::asio::any_completion_handler<void(boost::system::error_code)>{
                                 std::move(handler)});
        },
        token, std::move(channels));
  }

  template <class Token = boost::asio::deferred_t>
  auto unsubscribe(std::vector<std::string> channels, Token&& token = {}) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
        [this](auto handler, std::vector<std::string> c) {
          start_subscription(false, std::move(c),
                             boost::asio::any_completion_handler<void(boost::system::error_code)>{
                                 std::move(handler)});
        },
        token, std::move(channels));
  }

  // Called on the strand for every push that is not a (un)subscribe confirmation.
  void set_push_handler(push_handler h);
  // Called on the strand after every successful handshake (first connect and reconnects).
  void set_connect_handler(connect_handler h);

  // Ends run(): closes the socket and fails waiting requests with operation_aborted.
  void stop();

  bool is_ready() const noexcept;  // handshake done and the socket is up
  connection_stats stats() const noexcept;

 private:
  struct impl;

  void start_run(boost::asio::any_completion_handler<void(boost::system::error_code)> h);
  void start_exec(resp::request req, late_reply_handler late,
                  boost::asio::any_completion_handler<void(boost::system::error_code, response)> h);
  void start_subscription(bool subscribe, std::vector<std::string> channels,
                          boost::asio::any_completion_handler<void(boost::system::error_code)> h);

  std::shared_ptr<impl> impl_;
};

// The first server error among the replies as a typed code, or success.
boost::system::error_code check_replies(response const& replies) noexcept;

}  // namespace redisync
