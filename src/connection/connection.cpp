#include <redisync/connection.hpp>
#include <redisync/resp/parser.hpp>

#include "backoff.hpp"
#include "reply_spin.hpp"
#include "stream.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>

#include <sched.h>

#include <atomic>
#include <cstring>
#include <deque>
#include <set>
#include <variant>

namespace redisync {

namespace asio = boost::asio;
using boost::system::error_code;
using clock_type = std::chrono::steady_clock;
using namespace asio::experimental::awaitable_operators;

namespace {

constexpr auto tuple_token = asio::as_tuple(asio::deferred);

// Requests made while replies are being handled go out in groups of this many (handle_replies()).
constexpr std::size_t requests_per_reply_flush = 16;

// At most this many adjacent calls of one item script are merged into one command (take_for_write),
// which bounds how long one command keeps Redis busy (64 lock calls: a few hundred µs).
constexpr std::size_t calls_per_merged_script = 64;

struct exec_entry {
  enum class state : std::uint8_t { queued, written, retry_wait, done };

  resp::request req;
  response replies;
  std::size_t replies_left = 0;
  std::size_t pushes_left = 0;
  detail::pending_handler<void(error_code, response)> handler;
  late_reply_handler late;
  state st = state::queued;
  bool abandoned = false;  // the caller gave up after the request was written
  std::size_t merged = 1;  // an item script call: how many calls its command carries from here
  unsigned retries = 0;
  clock_type::time_point retry_deadline{};
};

using entry_ptr = std::shared_ptr<exec_entry>;

bool is_confirmation(resp::value const& push) {
  auto const e = push.elements();
  return !e.empty() && e[0].is_string() && resp::is_subscribe_family(e[0].text());
}

bool all_transient(response const& replies) {
  if (replies.empty()) return false;
  for (auto const& r : replies) {
    if (!r.is_error()) return false;
    auto const code = error_from_server_text(r.text());
    if (code != error::loading && code != error::busy) return false;
  }
  return true;
}

asio::awaitable<error_code> sleep_for(std::chrono::milliseconds d, error_code result) {
  asio::steady_timer timer{co_await asio::this_coro::executor, d};
  co_await timer.async_wait(tuple_token);
  co_return result;
}

bool cancelled(asio::cancellation_state const& s) {
  return s.cancelled() != asio::cancellation_type::none;
}

// On an io_context's own executor the strand is made over that type, not over the type-erased
// executor: Asio 1.26's strand asks its inner executor whether it may block on every hand-off,
// and through any_io_executor that answer is a heap allocation.
using io_strand = asio::strand<asio::io_context::executor_type>;
using any_strand = asio::strand<connection::executor_type>;
using strand_type = std::variant<io_strand, any_strand>;

strand_type make_strand_for(connection::executor_type ex) {
  if (auto const* io = ex.target<asio::io_context::executor_type>()) return asio::make_strand(*io);
  return asio::make_strand(std::move(ex));
}

}  // namespace

struct connection::impl : std::enable_shared_from_this<impl> {
  impl(executor_type ex, config c)
      : strand_{make_strand_for(std::move(ex))},
        executor_{std::visit([](auto const& s) { return executor_type{s}; }, strand_)},
        io_executor_{std::visit([](auto const& s) { return executor_type{s.get_inner_executor()}; },
                                strand_)},
        cfg_{std::move(c)}, stream_{io_executor_, cfg_}, backoff_timer_{io_executor_} {
    read_buffer_.resize(16 * 1024);
  }

  bool on_strand() const noexcept {
    return std::visit([](auto const& s) { return s.running_in_this_thread(); }, strand_);
  }

  // ------------------------------------------------------------------ submission
  void submit(entry_ptr e, bool priority) {
    e->replies_left = e->req.expected_replies();
    e->pushes_left = e->req.expected_pushes();
    if (e->retry_deadline == clock_type::time_point{}) {
      e->retry_deadline = clock_type::now() + cfg_.transient_retry_budget;
    }
    if (priority) {
      priority_queue_.push_back(std::move(e));
      start_write();
      return;
    }
    if (run_state_ == run_state::stopped) {
      // After stop() callers learn that there is no connection; after a fatal handshake error,
      // which one.
      bool const fatal = stop_reason_.category() == error_category();
      finish_later(std::move(e), fatal ? stop_reason_ : error_code{error::not_connected});
      return;
    }
    if (!ready_ && !e->req.opts().wait_for_connection) {
      finish_later(std::move(e), error::not_connected);
      return;
    }
    if (e->req.empty()) {
      finish_later(std::move(e), {});
      return;
    }
    queue_.push_back(std::move(e));
    if (!ready_) return;
    // Requests made by handlers of the replies being read go out in groups (handle_replies()).
    if (handling_replies_ && queue_.size() < requests_per_reply_flush) return;
    start_write();
  }

  template <class Handler>
  void exec_on_strand(resp::request req, Handler&& handler) {
    auto e = std::make_shared<exec_entry>();
    e->req = std::move(req);
    e->handler = {asio::any_completion_handler<void(error_code, response)>{
                      std::forward<Handler>(handler)},
                  completion_executor_};
    submit(std::move(e), false);
  }

  void install_cancellation(entry_ptr const& e) {
    auto slot = e->handler.cancellation_slot();
    if (!slot.is_connected()) return;
    slot.assign([weak = std::weak_ptr<exec_entry>{e}, self = shared_from_this()](
                    asio::cancellation_type type) {
      asio::post(self->executor_, [weak, self, type] {
        if (auto e = weak.lock()) self->cancel(e, type);
      });
    });
  }

  void cancel(entry_ptr const& e, asio::cancellation_type type) {
    using enum exec_entry::state;
    switch (e->st) {
      case queued:
        std::erase(queue_, e);
        abandon_unsent(*e);
        return;
      case retry_wait:
        abandon_unsent(*e);
        return;
      case written:
        // The command may already have run: only cancellation types that allow side effects.
        if (!e->abandoned &&
            (type & (asio::cancellation_type::terminal | asio::cancellation_type::partial)) !=
                asio::cancellation_type::none) {
          e->abandoned = true;
          e->handler.complete(asio::error::operation_aborted, {});
        }
        return;
      case done: return;
    }
  }

  // Cancelled before it was (re)sent: the command never reaches Redis. The late handler hears so
  // too, so that whoever waits for the late outcome is not left waiting.
  void abandon_unsent(exec_entry& e) {
    if (e.late) e.late(asio::error::operation_aborted, {});
    e.late = nullptr;
    finish_with(e, asio::error::operation_aborted);
  }

  // submit() may run inside the caller's initiating function (exec called on the strand); an
  // outcome known at once is delivered from a later handler, never from inside that call.
  void finish_later(entry_ptr e, error_code ec) {
    e->st = exec_entry::state::done;
    asio::post(executor_, [e = std::move(e), ec] { e->handler.complete(ec, {}); });
  }

  void finish_with(exec_entry& e, error_code ec) {
    e.st = exec_entry::state::done;
    if (e.abandoned) {
      if (e.late) e.late(ec, std::move(e.replies));
      return;
    }
    e.handler.complete(ec, ec ? response{} : std::move(e.replies));
  }

  // All replies of a request have arrived.
  void finish(entry_ptr const& e) {
    if (!e->abandoned && e->req.opts().retry_transient && all_transient(e->replies) &&
        clock_type::now() < e->retry_deadline) {
      schedule_retry(e);
      return;
    }
    finish_with(*e, {});
  }

  void schedule_retry(entry_ptr const& e) {
    e->st = exec_entry::state::retry_wait;
    e->replies.clear();
    auto const delay =
        std::min(std::chrono::milliseconds{10 << std::min(e->retries, 6u)}, std::chrono::milliseconds{1000});
    ++e->retries;
    auto timer = std::make_shared<asio::steady_timer>(io_executor_, delay);
    timer->async_wait(asio::bind_executor(executor_, [self = shared_from_this(), e, timer](error_code) {
      if (e->st != exec_entry::state::retry_wait) return;
      e->st = exec_entry::state::queued;
      self->submit(e, false);
    }));
  }


  // ------------------------------------------------------------------ run loop
  asio::awaitable<void> run_loop() {
    auto self = shared_from_this();
    detail::backoff delays{cfg_.reconnect_delay_min, cfg_.reconnect_delay_max};
    error_code final_ec;
    while (!stopping_) {
      ++connect_attempts_;
      auto connected = co_await (stream_.connect(cfg_) ||
                                 sleep_for(cfg_.connect_timeout, asio::error::timed_out));
      error_code ec = std::visit([](error_code e) { return e; }, connected);
      if (!ec && !stopping_) {
        last_read_ = clock_type::now();
        session_open_ = true;
        auto ended = co_await (reader() || supervisor(delays));
        ec = std::visit([](error_code e) { return e; }, ended);
      }
      teardown();
      if (stopping_) {
        final_ec = asio::error::operation_aborted;
        break;
      }
      if (ec == error::auth_failed || ec == error::handshake_failed) {
        final_ec = ec;
        break;
      }
      backoff_timer_.expires_after(delays.next());
      co_await backoff_timer_.async_wait(tuple_token);
    }
    stop_for_good(final_ec);
  }

  void stop_for_good(error_code ec) {
    run_state_ = run_state::stopped;
    stop_reason_ = ec;
    for (auto& e : std::exchange(queue_, {})) finish_with(*e, ec);
    for (auto& h : std::exchange(resubscribe_waiters_, {})) h.complete(ec);
    run_handler_.complete(ec);
  }

  void teardown() {
    // A write still in flight belongs to the old socket; its completion is ignored.
    session_open_ = false;
    writing_ = false;
    ++session_;
    ready_ = false;
    stream_.close();
    parser_.reset();
    read_begin_ = read_end_ = 0;
    for (auto& e : std::exchange(in_flight_, {})) finish_with(*e, error::ambiguous);
    for (auto& e : std::exchange(priority_queue_, {})) finish_with(*e, error::not_connected);
    std::erase_if(queue_, [this](entry_ptr const& e) {
      if (e->req.opts().wait_for_connection) return false;
      finish_with(*e, error::not_connected);
      return true;
    });
  }

  asio::awaitable<error_code> reader() {
    asio::cancellation_state const cs = co_await asio::this_coro::cancellation_state;
    for (;;) {
      if (read_end_ == read_buffer_.size()) {
        if (read_begin_ > 0) {
          std::memmove(read_buffer_.data(), read_buffer_.data() + read_begin_,
                       read_end_ - read_begin_);
          read_end_ -= read_begin_;
          read_begin_ = 0;
        } else {
          read_buffer_.resize(read_buffer_.size() * 2);
        }
      }
      auto const free_space =
          asio::buffer(read_buffer_.data() + read_end_, read_buffer_.size() - read_end_);
      auto [ec, n] = co_await poll_for_reply(free_space);
      if (ec == asio::error::would_block) std::tie(ec, n) = co_await stream_.read_some(free_space);
      if (ec) co_return ec;
      if (cancelled(cs)) co_return asio::error::operation_aborted;
      last_read_ = clock_type::now();
      read_end_ += n;
      handling_replies_ = true;
      error_code const hec = handle_replies();
      handling_replies_ = false;
      if (hec) co_return hec;
      start_write();
    }
  }

  // Reads a reply that is due without sleeping in the reactor, for up to the spin budget (see
  // reply_spin). Between two tries it yields, so other handlers and the reactor still run.
  // would_block: nothing came, or nothing is due.
  asio::awaitable<std::tuple<error_code, std::size_t>> poll_for_reply(asio::mutable_buffer buffer) {
    error_code ec = asio::error::would_block;
    // TLS records are read only through the stream (try_read always says would_block).
    bool const may_poll = cfg_.reply_spin.count() > 0 && !cfg_.tls && !in_flight_.empty();
    if (!may_poll || !spin_.should_spin()) co_return std::tuple{ec, 0};
    asio::cancellation_state const cs = co_await asio::this_coro::cancellation_state;
    auto const give_up = clock_type::now() + cfg_.reply_spin;
    for (bool first_try = true;; first_try = false) {
      std::size_t const n = stream_.try_read(buffer, ec);
      if (ec != asio::error::would_block) {
        spin_.on_reply_in_time(!first_try);
        ++spin_hits_;
        co_return std::tuple{ec, n};
      }
      if (clock_type::now() >= give_up) break;
      // Redis, or another thread here, may be waiting for this very CPU: let it run. Pinned to
      // Redis's CPU, polling without this lost 30-40% in W1 and W2; with it, W1-W3 stay within 6%
      // of never polling there, and it costs nothing measurable on a CPU of its own.
      ::sched_yield();
      co_await asio::post(executor_, asio::deferred);
      // A cancellation that came during the post found no operation to stop.
      if (cancelled(cs)) co_return std::tuple{error_code{asio::error::operation_aborted}, 0};
    }
    spin_.on_reply_late();
    ++spin_misses_;
    co_return std::tuple{ec, 0};
  }

  // Completes the requests whose replies are in the read buffer. Their handlers mostly make new
  // requests (a task that released one lock acquires the next): those are written in groups of
  // requests_per_reply_flush while the replies are handled, and the rest right after. One write
  // per request would cost a system call each; one write after all the replies leaves Redis idle
  // while the client works; groups keep both busy (W3 +30%, measured).
  error_code handle_replies() {
    while (read_begin_ < read_end_) {
      error_code pec;
      std::size_t const used = parser_.feed(
          std::string_view{read_buffer_.data() + read_begin_, read_end_ - read_begin_}, pec);
      if (pec) return error::protocol_error;
      read_begin_ += used;
      if (!parser_.has_value()) break;
      if (auto mec = on_message(parser_.take_value())) return mec;
    }
    if (read_begin_ == read_end_) read_begin_ = read_end_ = 0;
    return {};
  }

  error_code on_message(resp::value v) {
    if (v.kind() == resp::type::push) {
      if (is_confirmation(v) && !in_flight_.empty() && in_flight_.front()->pushes_left > 0) {
        auto const& e = in_flight_.front();
        --e->pushes_left;
        e->replies.push_back(std::move(v));
        complete_front_if_done();
      } else if (on_push_) {
        on_push_(v);
      }
      return {};
    }
    if (in_flight_.empty()) return error::protocol_error;  // a reply nobody asked for
    auto const& e = in_flight_.front();
    if (e->req.item_call()) return on_item_script_reply(std::move(v));
    if (e->replies_left > 0) {
      --e->replies_left;
    } else {
      e->pushes_left = 0;  // an error instead of subscribe confirmations
    }
    e->replies.push_back(std::move(v));
    complete_front_if_done();
    return {};
  }

  // The reply to a command that carries one or more item script calls: each call gets its item's
  // reply (a call alone gets the whole reply), or every call the reply that failed the whole
  // command (NOSCRIPT, BUSY, OOM).
  error_code on_item_script_reply(resp::value v) {
    std::size_t const calls = in_flight_.front()->merged;
    if (in_flight_.size() < calls) return error::protocol_error;
    bool const per_item = calls > 1 && v.kind() == resp::type::array && v.elements().size() == calls;
    for (std::size_t i = 0; i < calls; ++i) {
      entry_ptr e = std::move(in_flight_.front());
      in_flight_.pop_front();
      e->replies_left = 0;
      if (per_item) {
        e->replies.push_back(std::move(v.mutable_elements()[i]));
      } else {
        e->replies.push_back(i + 1 == calls ? std::move(v) : v);  // a call alone: no copy
      }
      finish(e);
    }
    return {};
  }

  void complete_front_if_done() {
    auto e = in_flight_.front();
    if (e->replies_left != 0 || e->pushes_left != 0) return;
    in_flight_.pop_front();
    finish(e);
  }

  bool has_writable() const noexcept {
    return !priority_queue_.empty() || (ready_ && !queue_.empty());
  }

  // Adjacent calls of one item script go out as one command: Redis spends about as much on a script
  // call as on a few of the commands inside it (W3: 16% less Redis CPU per lock pair merged).
  void take_for_write(std::deque<entry_ptr>& from, std::size_t& count) {
    while (!from.empty()) {
      std::size_t calls = 1;
      resp::request const& first = from.front()->req;
      while (calls < from.size() && calls < calls_per_merged_script &&
             first.can_merge_with(from[calls]->req)) {
        ++calls;
      }
      if (calls == 1) {
        write_buffer_ += first.payload();
      } else {
        merging_.clear();
        for (std::size_t i = 0; i < calls; ++i) merging_.push_back(&from[i]->req);
        resp::request::append_merged(write_buffer_, merging_);
      }
      from.front()->merged = calls;
      for (std::size_t i = 0; i < calls; ++i) {
        entry_ptr e = std::move(from.front());
        from.pop_front();
        e->st = exec_entry::state::written;
        ++count;
        if (e->replies_left == 0 && e->pushes_left == 0) {
          finish_later(std::move(e), {});
        } else {
          in_flight_.push_back(std::move(e));
        }
      }
    }
  }

  // Writes everything queued in one write; whatever is queued meanwhile goes out in the next.
  // Started directly by submit(), so a request on an idle connection is sent without first
  // waking another coroutine. What the socket takes at once is written synchronously, so the
  // next group can follow without waiting for a posted completion; only a remainder waits for
  // the socket. A write error closes the socket, which ends the session's reader.
  void start_write() {
    if (writing_ || !session_open_ || !has_writable()) return;
    write_buffer_.clear();
    std::size_t count = 0;
    take_for_write(priority_queue_, count);
    if (ready_) take_for_write(queue_, count);
    ++writes_;
    requests_written_ += count;
    error_code wec;
    std::size_t const sent = stream_.try_write(asio::buffer(write_buffer_), wec);
    if (!wec && sent == write_buffer_.size()) return;
    if (wec && wec != asio::error::would_block) {
      stream_.close();
      return;
    }
    writing_ = true;
    stream_.async_write(asio::buffer(write_buffer_) + sent,
                        asio::bind_executor(executor_, [self = shared_from_this(), session = session_](
                                                         error_code ec, std::size_t) {
                          if (session != self->session_) return;
                          self->writing_ = false;
                          if (ec) {
                            self->stream_.close();
                            return;
                          }
                          self->start_write();
                        }));
  }

  asio::awaitable<std::tuple<error_code, response>> exec_priority(resp::request req) {
    auto initiation = [self = shared_from_this()](auto handler, resp::request r) {
      auto e = std::make_shared<exec_entry>();
      e->req = std::move(r);
      e->handler = {std::move(handler), self->completion_executor_};
      self->install_cancellation(e);
      self->submit(std::move(e), true);
    };
    co_return co_await asio::async_initiate<decltype(tuple_token), void(error_code, response)>(
        initiation, tuple_token, std::move(req));
  }

  resp::request handshake_request() const {
    resp::request req;
    std::string_view const user =
        cfg_.username.empty() ? std::string_view{"default"} : std::string_view{cfg_.username};
    if (cfg_.password.empty()) {
      req.push("HELLO", "3", "SETNAME", cfg_.client_name);
    } else {
      req.push("HELLO", "3", "AUTH", user, cfg_.password, "SETNAME", cfg_.client_name);
    }
    if (cfg_.database != 0) req.push("SELECT", cfg_.database);
    if (!channels_.empty()) req.push_range("SUBSCRIBE", channels_);
    return req;
  }

  // Handshake, then health checks until the session ends.
  asio::awaitable<error_code> supervisor(detail::backoff& delays) {
    asio::cancellation_state const cs = co_await asio::this_coro::cancellation_state;
    auto outcome = co_await (exec_priority(handshake_request()) ||
                             sleep_for(cfg_.connect_timeout, error::timeout));
    if (outcome.index() == 1) co_return error::timeout;
    auto& [ec, replies] = std::get<0>(outcome);
    if (ec) co_return ec;
    std::size_t const checked = cfg_.database != 0 ? 2 : 1;
    for (std::size_t i = 0; i < checked && i < replies.size(); ++i) {
      if (!replies[i].is_error()) continue;
      auto const code = error_from_server_text(replies[i].text());
      if (code == error::loading || code == error::busy) co_return code;
      co_return (code == error::auth_failed || code == error::no_permission ||
                 replies[i].text().starts_with("ERR AUTH"))
          ? error::auth_failed
          : error::handshake_failed;
    }
    ready_ = true;
    ++connects_;
    delays.reset();
    start_write();
    for (auto& h : std::exchange(resubscribe_waiters_, {})) h.complete({});
    if (on_connect_) on_connect_();

    asio::steady_timer timer{io_executor_};
    auto const interval = cfg_.health_check_interval;
    for (;;) {
      if (interval.count() <= 0) {
        timer.expires_at(asio::steady_timer::time_point::max());
      } else {
        timer.expires_after(interval);
      }
      co_await timer.async_wait(tuple_token);
      if (cancelled(cs)) co_return asio::error::operation_aborted;
      auto const idle = clock_type::now() - last_read_;
      if (idle >= 2 * interval) co_return error::health_check_failed;
      if (idle >= interval) {
        auto ping = std::make_shared<exec_entry>();
        ping->req.push("PING");
        submit(std::move(ping), true);
      }
    }
  }

  strand_type strand_;
  // The strand as a type-erased executor, converted once; everything is posted through it.
  executor_type executor_;
  asio::any_completion_executor const completion_executor_{executor_};  // see pending_handler
  executor_type io_executor_;
  config cfg_;
  detail::reply_spin spin_;
  detail::stream stream_;
  resp::parser parser_;
  std::vector<char> read_buffer_;
  std::size_t read_begin_ = 0;
  std::size_t read_end_ = 0;
  std::string write_buffer_;
  std::vector<resp::request const*> merging_;  // calls being merged into one command
  std::deque<entry_ptr> priority_queue_;
  std::deque<entry_ptr> queue_;
  std::deque<entry_ptr> in_flight_;
  asio::steady_timer backoff_timer_;
  bool session_open_ = false;  // connected; the handshake may still be running
  bool writing_ = false;           // a remainder the socket did not take is being written
  bool handling_replies_ = false;  // inside handle_replies()
  std::uint64_t session_ = 0;
  std::set<std::string> channels_;
  std::vector<detail::pending_handler<void(error_code)>> resubscribe_waiters_;
  push_handler on_push_;
  connect_handler on_connect_;

  enum class run_state : std::uint8_t { idle, running, stopped };
  run_state run_state_ = run_state::idle;
  error_code stop_reason_;
  detail::pending_handler<void(error_code)> run_handler_;
  std::atomic<bool> ready_{false};  // also read by is_ready() from any thread
  bool stopping_ = false;
  clock_type::time_point last_read_{};

  std::atomic<std::uint64_t> connects_{0};
  std::atomic<std::uint64_t> connect_attempts_{0};
  std::atomic<std::uint64_t> writes_{0};
  std::atomic<std::uint64_t> requests_written_{0};
  std::atomic<std::uint64_t> spin_hits_{0};
  std::atomic<std::uint64_t> spin_misses_{0};
};

connection::connection(executor_type ex, config cfg)
    : impl_{std::make_shared<impl>(std::move(ex), std::move(cfg))} {}

connection::~connection() { stop(); }

connection::executor_type connection::get_executor() const noexcept { return impl_->executor_; }

connection::executor_type connection::io_executor() const noexcept { return impl_->io_executor_; }

config const& connection::cfg() const noexcept { return impl_->cfg_; }

void connection::start_run(asio::any_completion_handler<void(error_code)> h) {
  detail::pending_handler<void(error_code)> handler{std::move(h), impl_->completion_executor_};
  auto slot = handler.cancellation_slot();
  if (slot.is_connected()) {
    slot.assign([weak = std::weak_ptr<impl>{impl_}](asio::cancellation_type) {
      if (auto self = weak.lock()) {
        asio::post(self->executor_, [self] {
          self->stopping_ = true;
          self->stream_.close();
          self->backoff_timer_.cancel();
        });
      }
    });
  }
  asio::post(impl_->executor_, [self = impl_, handler = std::move(handler)]() mutable {
    if (self->run_state_ == impl::run_state::running) {
      handler.complete(error::invalid_argument);
      return;
    }
    self->run_state_ = impl::run_state::running;
    self->stopping_ = false;
    self->stop_reason_ = {};
    self->run_handler_ = std::move(handler);
    asio::co_spawn(self->executor_, self->run_loop(), asio::detached);
  });
}

void connection::start_exec(resp::request req, late_reply_handler late,
                            asio::any_completion_handler<void(error_code, response)> h) {
  auto e = std::make_shared<exec_entry>();
  e->req = std::move(req);
  e->late = std::move(late);
  e->handler = {std::move(h), impl_->completion_executor_};
  impl_->install_cancellation(e);
  // From the strand itself (the lock layer's coroutines) the request is queued, and written if
  // the socket is idle, right away; from anywhere else it hops onto the strand first.
  if (impl_->on_strand()) {
    impl_->submit(std::move(e), false);
    return;
  }
  asio::post(impl_->executor_, [self = impl_, e = std::move(e)]() mutable {
    self->submit(std::move(e), false);
  });
}

void connection::start_subscription(bool subscribe, std::vector<std::string> channels,
                                    asio::any_completion_handler<void(error_code)> h) {
  detail::pending_handler<void(error_code)> handler{std::move(h), impl_->completion_executor_};
  asio::post(impl_->executor_, [self = impl_, subscribe, channels = std::move(channels),
                                  handler = std::move(handler)]() mutable {
    if (channels.empty()) {
      handler.complete({});
      return;
    }
    resp::request req;
    if (subscribe) {
      self->channels_.insert(channels.begin(), channels.end());
      req.push_range("SUBSCRIBE", channels);
    } else {
      for (auto const& c : channels) self->channels_.erase(c);
      req.opts().wait_for_connection = false;
      req.push_range("UNSUBSCRIBE", channels);
    }
    auto on_reply = [self, subscribe, channels = std::move(channels),
                     handler = std::move(handler)](error_code ec, response replies) mutable {
      if (!ec) ec = check_replies(replies);
      bool const lost_connection = ec == error::ambiguous || ec == error::not_connected;
      if (subscribe && lost_connection && self->run_state_ != impl::run_state::stopped) {
        // The next handshake subscribes every channel in the set; it confirms this one too.
        self->resubscribe_waiters_.push_back(std::move(handler));
        return;
      }
      if (subscribe && ec) {
        for (auto const& c : channels) self->channels_.erase(c);
      }
      // A channel dropped while disconnected is not subscribed after the reconnect.
      handler.complete(!subscribe && lost_connection ? error_code{} : ec);
    };
    self->exec_on_strand(std::move(req), std::move(on_reply));
  });
}

void connection::set_push_handler(push_handler h) {
  asio::dispatch(impl_->executor_,
                 [self = impl_, h = std::move(h)]() mutable { self->on_push_ = std::move(h); });
}

void connection::set_connect_handler(connect_handler h) {
  asio::dispatch(impl_->executor_,
                 [self = impl_, h = std::move(h)]() mutable { self->on_connect_ = std::move(h); });
}

void connection::stop() {
  asio::post(impl_->executor_, [self = impl_] {
    self->stopping_ = true;
    self->stream_.close();
    self->backoff_timer_.cancel();
    if (self->run_state_ == impl::run_state::idle) self->stop_for_good(asio::error::operation_aborted);
  });
}

bool connection::is_ready() const noexcept { return impl_->ready_; }

connection_stats connection::stats() const noexcept {
  return {impl_->connects_,          impl_->connect_attempts_, impl_->writes_,
          impl_->requests_written_, impl_->spin_hits_,        impl_->spin_misses_};
}

error_code check_replies(response const& replies) noexcept {
  for (auto const& r : replies) {
    if (r.is_error()) return error_from_server_text(r.text());
  }
  return {};
}

}  // namespace redisync
