#pragma once

// The state behind io::connection, all of it on the connection's strand. connection.cpp has
// requests, subscriptions and the public face; lifecycle.cpp the run loop, handshake, health check
// and events; session.cpp reads and writes.

#include "io/backoff.hpp"
#include "io/connection.hpp"
#include "io/connection_group.hpp"
#include "io/health_check.hpp"
#include "io/reply_spin.hpp"
#include "io/stream.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <mutex>
#include <set>

namespace redisync::detail::io {

// Requests made while replies are being handled go out in groups of this many (handle_bytes()).
inline constexpr std::size_t requests_per_reply_flush = 16;

struct connection::impl : std::enable_shared_from_this<impl> {
  impl(std::shared_ptr<connection_group> group, config c, connection_events ev);

  bool on_strand() const noexcept { return group_->on_strand(); }

  // ---- requests (connection.cpp)
  entry_ptr make_entry(outgoing out, late_reply_handler late,
                       boost::asio::any_completion_handler<void(error_code, response)> handler);
  void install_cancellation(entry_ptr const& e);
  void submit(entry_ptr e, bool priority);
  boost::asio::awaitable<std::tuple<error_code, response>> exec_priority(resp::request req);
  void arm_timer();                         // for what the multiplexer has next
  void arm_timer(clock_type::time_point at);  // for `at`, unless armed earlier

  // (UN)SUBSCRIBE, or one SSUBSCRIBE / SUNSUBSCRIBE per channel (node_options::sharded_pubsub).
  void push_subscription(resp::request& req, bool on, std::span<std::string const> channels) const;
  void on_push(resp::value const& v);

  // ---- lifecycle (lifecycle.cpp)
  boost::asio::awaitable<void> run_loop();
  // Where to connect this time (a Sentinel's current master): into cfg_; on failure, `failure`
  // says why in the resolver's own words.
  boost::asio::awaitable<error_code> resolve_target(std::string& failure);
  boost::asio::awaitable<error_code> supervisor(backoff& delays);
  error_code check_handshake(response const& replies);
  resp::request handshake_request() const;
  void teardown();
  void stop_for_good(error_code ec);
  void send_ping();
  std::string hint(std::string_view step, error_code ec) const;
  void emit(event_kind kind, event_level level, error_code ec, std::string_view detail) const;
  void set_last_failure(std::string text);

  // ---- the session's reading and writing (session.cpp)
  boost::asio::awaitable<error_code> reader();
  boost::asio::awaitable<std::tuple<error_code, std::size_t>> poll_for_reply(boost::asio::mutable_buffer buffer);
  error_code handle_bytes();
  boost::asio::awaitable<void> leave_strand();
  void start_write();

  // The strand and the gate of writes, shared with the other connections of the client's router.
  std::shared_ptr<connection_group> group_;
  // The strand as a type-erased executor; everything is posted through it.
  executor_type executor_;
  // A handler that names no executor is the library's own: it completes on the strand (see
  // pending_handler). The client binds the application's handlers to their executors first.
  executor_type io_executor_;
  std::shared_ptr<delivery> delivery_ = group_->completions();
  completion_homes const homes_{executor_, executor_, delivery_};
  config cfg_;
  connection_events events_;
  node_options node_;
  multiplexer mux_;
  health_check health_;
  reply_spin spin_;
  stream stream_;
  std::vector<char> read_buffer_;
  std::size_t read_begin_ = 0;
  std::size_t read_end_ = 0;
  std::string write_buffer_;
  boost::asio::steady_timer backoff_timer_;
  boost::asio::steady_timer retry_timer_;
  std::optional<clock_type::time_point> retry_armed_for_;
  boost::asio::steady_timer health_timer_;
  bool session_open_ = false;      // connected; the handshake may still be running
  std::string reconnect_reason_;   // why reconnect() closed the session, until the event says so
  bool writing_ = false;           // a remainder the socket did not take is being written
  // Why a write of this session failed: the cause of its end, which the reader only sees as a
  // cancelled read (a TLS alert, such as a refused client certificate, fails the write first).
  error_code write_error_;
  bool handling_replies_ = false;  // inside handle_bytes()
  std::uint64_t session_ = 0;
  std::set<std::string> channels_;
  std::string handshake_failure_;  // the server's refusal, or the handshake's timeout
  mutable std::mutex failure_mutex_;
  std::string last_failure_;  // of the last attempt to connect; empty after a success
  std::string address_;       // where the last attempt went (under failure_mutex_)
  std::vector<pending_handler<void(error_code)>> resubscribe_waiters_;

  enum class run_state : std::uint8_t { idle, running, stopped };
  run_state run_state_ = run_state::idle;
  pending_handler<void(error_code)> run_handler_;
  std::atomic<bool> ready_{false};  // also read by is_ready() from any thread
  std::atomic<bool> run_requested_{false};  // set by run() on the caller's thread, before the strand
  bool stopping_ = false;

  std::atomic<std::uint64_t> connects_{0};
  std::atomic<std::uint64_t> connect_attempts_{0};
  std::atomic<std::uint64_t> writes_{0};
  std::atomic<std::uint64_t> requests_written_{0};
  std::atomic<std::uint64_t> spin_hits_{0};
  std::atomic<std::uint64_t> spin_misses_{0};
  std::atomic<std::uint64_t> health_pings_{0};
};

}  // namespace redisync::detail::io
