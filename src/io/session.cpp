// Reading and writing one session of a connection: the reader loop (with polling for a due reply)
// and the writer that everyone who queues a request starts.

#include "io/connection_impl.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/this_coro.hpp>

#include <sched.h>

#include <cstring>

namespace redisync::detail::io {

namespace asio = boost::asio;

namespace {

bool cancelled(asio::cancellation_state const& s) { return s.cancelled() != asio::cancellation_type::none; }

}  // namespace

asio::awaitable<error_code> connection::impl::reader() {
  asio::cancellation_state const cs = co_await asio::this_coro::cancellation_state;
  for (;;) {
    if (read_end_ == read_buffer_.size()) {
      if (read_begin_ > 0) {
        std::memmove(read_buffer_.data(), read_buffer_.data() + read_begin_, read_end_ - read_begin_);
        read_end_ -= read_begin_;
        read_begin_ = 0;
      } else {
        read_buffer_.resize(read_buffer_.size() * 2);
      }
    }
    auto const free_space = asio::buffer(read_buffer_.data() + read_end_, read_buffer_.size() - read_end_);
    auto [ec, n] = co_await poll_for_reply(free_space);
    // The completions of the last replies did not leave with the reader: they leave on their own.
    delivery_->release_hold();
    if (ec == asio::error::would_block) std::tie(ec, n) = co_await stream_.read_some(free_space);
    if (ec) co_return ec;
    if (cancelled(cs)) co_return asio::error::operation_aborted;
    read_end_ += n;
    // Their completions wait: if the reader polls for the next reply, they leave the strand with it.
    delivery_->hold();
    if (auto const hec = handle_bytes()) {
      delivery_->release_hold();
      co_return hec;
    }
    start_write();
  }
}

// Reads a reply that is due without sleeping in the reactor, for up to the spin budget (see
// reply_spin). Between two tries it yields, so other handlers and the reactor still run.
// would_block: nothing came, or nothing is due.
asio::awaitable<std::tuple<error_code, std::size_t>> connection::impl::poll_for_reply(asio::mutable_buffer buffer) {
  error_code ec = asio::error::would_block;
  // TLS records are read only through the stream (try_read always says would_block).
  bool const may_poll =
      cfg_.reply_spin.count() > 0 && !cfg_.tls && (mux_.reply_due() || delivery_->request_expected());
  if (!may_poll || !spin_.should_spin()) co_return std::tuple{ec, 0};
  asio::cancellation_state const cs = co_await asio::this_coro::cancellation_state;
  auto const give_up = clock_type::now() + cfg_.reply_spin;
  for (bool tried = false;;) {
    if (mux_.reply_due()) {
      std::size_t const n = stream_.try_read(buffer, ec);
      if (ec != asio::error::would_block) {
        spin_.on_reply_in_time(tried);
        ++spin_hits_;
        co_return std::tuple{ec, n};
      }
      tried = true;
      if (clock_type::now() >= give_up) break;
      // Redis, or another thread here, may be waiting for this very CPU: let it run. Pinned to
      // Redis's CPU, polling without this lost 30-40% in W1 and W2; with it, W1-W3 stay within
      // 6% of never polling there, and it costs nothing measurable on a CPU of its own.
      ::sched_yield();
    } else if (!delivery_->request_expected() || clock_type::now() >= give_up) {
      // Nothing due and no request on its way: no reply can come (none is late).
      co_return std::tuple{ec, 0};
    }
    co_await leave_strand();
    // A cancellation that came during the post found no operation to stop.
    if (cancelled(cs)) co_return std::tuple{error_code{asio::error::operation_aborted}, 0};
  }
  spin_.on_reply_late();
  ++spin_misses_;
  co_return std::tuple{ec, 0};
}

// Out of the strand and back, taking the completions that wait along (delivery::leave_with):
// handlers queued meanwhile run, a completion that makes the next request among them, and with
// the strand free its request goes out at once.
asio::awaitable<void> connection::impl::leave_strand() {
  auto leave = [this](auto resume) { delivery_->leave_with(delivery::call{std::move(resume)}); };
  co_await asio::async_initiate<decltype(asio::deferred), void()>(leave, asio::deferred);
}

// Completes the requests whose replies are in the read buffer. Their handlers mostly make new
// requests (a task that released one lock acquires the next): those are written in groups of
// requests_per_reply_flush while the replies are handled, and the rest right after. One write per
// request would cost a system call each; one write after all the replies leaves Redis idle while
// the client works; groups keep both busy (W3 +30%, measured).
error_code connection::impl::handle_bytes() {
  auto const now = clock_type::now();
  health_.on_read(now);
  error_code ec;
  handling_replies_ = true;
  read_begin_ += mux_.on_bytes({read_buffer_.data() + read_begin_, read_end_ - read_begin_}, now, ec);
  handling_replies_ = false;
  if (read_begin_ == read_end_) read_begin_ = read_end_ = 0;
  arm_timer();
  return ec;
}

// Writes everything queued in one write; whatever is queued meanwhile goes out in the next.
// Started directly by whoever queues a request, so a request on an idle connection is sent without
// first waking another coroutine. What the socket takes at once is written synchronously, so the
// next group can follow without waiting for a posted completion; only a remainder waits for the
// socket. A write error closes the socket, which ends the session's reader.
void connection::impl::start_write() {
  if (writing_ || !session_open_ || !mux_.has_writable()) return;
  write_buffer_.clear();
  mux_.take_for_write(write_buffer_);
  ++writes_;
  requests_written_ = mux_.requests_written();
  error_code wec;
  std::size_t const sent = stream_.try_write(asio::buffer(write_buffer_), wec);
  if (!wec && sent == write_buffer_.size()) return;
  if (wec && wec != asio::error::would_block) {
    write_error_ = wec;
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
                          self->write_error_ = ec;
                          self->stream_.close();
                          return;
                        }
                        self->start_write();
                      }));
}

}  // namespace redisync::detail::io
