#pragma once

// The sans-io core of one connection: the requests of many callers queued, written together and
// matched in order with their replies; server pushes handed on; adjacent mergeable calls written
// as one command (outgoing.hpp); cancellation of unwritten and written requests; LOADING and BUSY
// replies sent again after a pause. It has no socket, timer or clock: the connection driver feeds
// it bytes and the time, writes what it hands out, and arms a timer for next_retry().

#include "io/pending_handler.hpp"
#include <redisync/error.hpp>
#include <redisync/resp/parser.hpp>
#include <redisync/resp/value.hpp>

#include "io/outgoing.hpp"

#include <boost/asio/cancellation_type.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace redisync::detail::io {

using clock_type = std::chrono::steady_clock;
using error_code = boost::system::error_code;
using response = std::vector<resp::value>;

// Receives the replies of a written request whose caller stopped waiting (cancelled), or
// error::ambiguous if the connection dropped before they came, or operation_aborted if the request
// was cancelled before it was written (it never ran).
using late_reply_handler = std::function<void(error_code, response)>;

struct exec_entry {
  enum class state : std::uint8_t { queued, written, retry_wait, done };

  outgoing out;
  response replies;
  std::size_t replies_left = 0;
  std::size_t pushes_left = 0;
  pending_handler<void(error_code, response)> handler;
  late_reply_handler late;
  state st = state::queued;
  bool abandoned = false;  // the caller gave up after the request was written
  std::size_t merged = 1;  // calls that the command written from here carries
  unsigned retries = 0;
  clock_type::time_point retry_at{};        // when a transient error reply is sent again
  clock_type::time_point retry_deadline{};  // after this, transient errors are final
  clock_type::time_point connect_deadline{};  // waiting for a connection: fails with not_connected then
  clock_type::time_point down_deadline{};     // earlier, once a connect attempt has failed
  unsigned redirects = 0;  // MOVED, ASK and READONLY replies followed (a bound against loops)
  bool asking = false;     // sent after ASKING (its reply is dropped), once
  bool asking_sent = false;  // the ASKING reply is still to come
  bool asked = false;        // last went after ASKING: a slot on its way to this node
  std::weak_ptr<void> home;  // the connection whose multiplexer has it (for cancellation)
};

using entry_ptr = std::shared_ptr<exec_entry>;

class multiplexer {
 public:
  struct hooks {
    // A push that confirms no subscription of a request: a message, or one nobody asked for.
    std::function<void(resp::value const&)> push;
    // Completes `e` with `ec` outside the current call (which may be an initiating function).
    std::function<void(entry_ptr, error_code)> finish_later;
    // A request whose every reply redirects it elsewhere (MOVED, ASK, READONLY, or TRYAGAIN to a
    // request sent after ASKING: the importing node lacks some of its keys, so it goes back to the
    // slot's owner): true when the hook took it over; false completes it with those replies.
    std::function<bool(entry_ptr const&)> redirect;
  };

  // A request is redirected this many times at most; the next redirect is its reply. (While a
  // failover settles, two nodes may each send it to the other: the router then waits between.)
  static constexpr unsigned max_redirects = 16;

  // `connection_wait`: how long a request waits for a connection before it fails.
  multiplexer(std::chrono::milliseconds transient_budget, std::chrono::milliseconds connection_wait, hooks h)
      : transient_budget_{transient_budget}, connection_wait_{connection_wait}, hooks_{std::move(h)} {}

  // The handshake is done: ordinary requests may be written.
  void set_ready(bool ready) noexcept {
    ready_ = ready;
    if (ready) down_ = false;
  }
  // A connect attempt failed: requests with a shorter wait for that case end theirs now.
  void on_connect_failed(clock_type::time_point now);
  // When `e`, waiting for a connection, fails with not_connected.
  clock_type::time_point connection_deadline(exec_entry const& e) const;
  bool ready() const noexcept { return ready_; }
  // For good: queued requests fail with `reason`, and so does every later one.
  void stop(error_code reason);

  // Queues `e`; a priority request (the handshake, a health check) goes out first, also before
  // the handshake is done. Fails it through finish_later when it cannot be sent.
  void submit(entry_ptr e, bool priority, clock_type::time_point now);
  // Unwritten: removed, the caller and the late handler hear operation_aborted. Written: the caller
  // hears operation_aborted now (for terminal and partial cancellation) and the reply goes to the
  // late handler.
  void cancel(entry_ptr const& e, boost::asio::cancellation_type type);

  bool has_writable() const noexcept { return !priority_.empty() || (ready_ && !queue_.empty()); }
  std::size_t queued() const noexcept { return queue_.size(); }
  // The requests not written, or waiting to be written again after a transient reply, taken out
  // (for another connection).
  std::vector<entry_ptr> take_queued();

  // Appends everything writable to `out`; returns how many requests that is.
  std::size_t take_for_write(std::string& out);
  bool reply_due() const noexcept { return !in_flight_.empty(); }

  // Consumes whole replies and pushes at the start of `bytes`, read at `now`; returns how many
  // bytes it used. error::protocol_error for bytes that are not RESP3 or a reply nobody asked for.
  std::size_t on_bytes(std::string_view bytes, clock_type::time_point now, error_code& ec);

  // The connection is gone at `now`: written requests complete with error::ambiguous, priority
  // ones and those that must not wait for a connection with error::not_connected; the rest wait,
  // for the connection wait at most.
  void on_disconnect(clock_type::time_point now);

  // When something is next due: a request waiting after a LOADING or BUSY reply is sent again, or
  // one waiting for a connection runs out of time.
  std::optional<clock_type::time_point> next_timer() const;
  // Sends again what is due to be, and fails with error::not_connected the requests whose wait
  // for a connection ended.
  void on_timer(clock_type::time_point now);

  std::uint64_t requests_written() const noexcept { return requests_written_; }

 private:
  void on_message(resp::value v, error_code& ec);
  void on_item_reply(resp::value v, error_code& ec);
  void complete_front_if_done();
  void finish(entry_ptr const& e);
  void finish_with(exec_entry& e, error_code ec);
  void abandon_unsent(exec_entry& e, error_code ec);
  void take(std::deque<entry_ptr>& from, std::string& out, std::size_t& count);

  void expire_waiting(clock_type::time_point now);
  void start_connection_wait(exec_entry& e, clock_type::time_point now) const;

  std::chrono::milliseconds transient_budget_;
  std::chrono::milliseconds connection_wait_;
  hooks hooks_;
  resp::parser parser_;
  std::deque<entry_ptr> priority_;
  std::deque<entry_ptr> queue_;
  std::deque<entry_ptr> in_flight_;
  std::vector<entry_ptr> retrying_;
  std::vector<outgoing const*> merging_;  // calls being merged into one command
  bool ready_ = false;
  bool down_ = false;  // a connect attempt failed since the last handshake
  bool stopped_ = false;
  error_code stop_reason_;
  clock_type::time_point now_{};  // of the bytes being handled
  std::uint64_t requests_written_ = 0;
};

}  // namespace redisync::detail::io
