#include "io/connection_impl.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/system/system_error.hpp>

namespace redisync::detail::io {

namespace asio = boost::asio;

namespace {

constexpr auto tuple_token = asio::as_tuple(asio::deferred);

}  // namespace

connection::impl::impl(std::shared_ptr<connection_group> group, config c, connection_events ev)
    : group_{std::move(group)},
      executor_{group_->executor()},
      io_executor_{group_->io_executor()},
      cfg_{std::move(c)},
      events_{std::move(ev)},
      mux_{cfg_.transient_retry_budget, cfg_.connection_wait_limit,
           {.push = [this](resp::value const& v) { on_push(v); },
            // A completion known at once is delivered from a later handler, never from inside
            // the initiating function that submitted it.
            .finish_later = [this](entry_ptr e, error_code ec) {
              asio::post(executor_, [e = std::move(e), ec] { e->handler.complete(ec, {}); });
            },
            .redirect = events_.redirect}},
      health_{cfg_.health_check_interval, clock_type::now()},
      stream_{io_executor_, cfg_},
      backoff_timer_{io_executor_},
      retry_timer_{io_executor_},
      health_timer_{io_executor_} {
  read_buffer_.resize(16 * 1024);
}

// ------------------------------------------------------------------------------ requests

entry_ptr connection::impl::make_entry(outgoing out, late_reply_handler late,
                                       asio::any_completion_handler<void(error_code, response)> handler) {
  auto e = std::make_shared<exec_entry>();
  e->out = std::move(out);
  e->late = std::move(late);
  e->handler = {std::move(handler), homes_};
  return e;
}

void connection::impl::install_cancellation(entry_ptr const& e) {
  auto slot = e->handler.cancellation_slot();
  if (!slot.is_connected()) return;
  // The request may have moved to another connection by then (a redirect): its home says where.
  slot.assign([weak = std::weak_ptr<exec_entry>{e}, ex = executor_](asio::cancellation_type type) {
    asio::post(ex, [weak, type] {
      auto e = weak.lock();
      if (auto home = e ? std::static_pointer_cast<impl>(e->home.lock()) : nullptr) home->mux_.cancel(e, type);
    });
  });
}

void connection::impl::submit(entry_ptr e, bool priority) {
  if (!run_requested_) {
    // Nothing would ever connect: the caller learns at once instead of after the connection wait.
    e->st = exec_entry::state::done;
    asio::post(executor_, [e = std::move(e)] { e->handler.complete(error::not_started, {}); });
    return;
  }
  auto const* entry = e.get();
  e->home = weak_from_this();
  mux_.submit(std::move(e), priority, clock_type::now());
  // Its wait for a connection is bounded (only this request's deadline is new).
  if (!priority && !mux_.ready() && entry->st == exec_entry::state::queued) arm_timer(mux_.connection_deadline(*entry));
  if (!session_open_ || (group_->writes_held() > 0 && !priority)) return;
  // Requests made by handlers of the replies being read, requests that arrive together, and the
  // requests of a completion that runs go out in groups (handle_bytes(), end_arrival(),
  // delivery::corked()).
  if (!priority && mux_.queued() < requests_per_reply_flush &&
      (group_->completions()->corked() || handling_replies_ || group_->arriving())) {
    return;
  }
  start_write();
}

asio::awaitable<std::tuple<error_code, response>> connection::impl::exec_priority(resp::request req) {
  auto initiation = [self = shared_from_this()](auto handler, resp::request r) {
    auto e = self->make_entry(outgoing::from(std::move(r)), {}, std::move(handler));
    self->install_cancellation(e);
    self->submit(std::move(e), true);
  };
  co_return co_await asio::async_initiate<decltype(tuple_token), void(error_code, response)>(
      initiation, tuple_token, std::move(req));
}

// LOADING and BUSY replies and requests waiting for a connection wait in the multiplexer; one
// timer sends the former again and ends the latter's wait when due.
void connection::impl::arm_timer() {
  if (auto const next = mux_.next_timer()) arm_timer(*next);
}

void connection::impl::arm_timer(clock_type::time_point at) {
  if (retry_armed_for_ && *retry_armed_for_ <= at) return;
  retry_armed_for_ = at;
  retry_timer_.expires_at(at);
  retry_timer_.async_wait(asio::bind_executor(executor_, [weak = weak_from_this()](error_code ec) {
    auto self = weak.lock();
    if (!self || ec) return;
    self->retry_armed_for_.reset();
    self->mux_.on_timer(clock_type::now());
    self->start_write();
    self->arm_timer();
  }));
}

// ------------------------------------------------------------------------------ public face

namespace {

config checked(config cfg) {
  if (auto const problem = cfg.problem(); !problem.empty()) {
    throw boost::system::system_error{make_error_code(error::invalid_argument), "redisync: " + problem};
  }
  return cfg;
}

}  // namespace

connection::connection(executor_type ex, config cfg, connection_events events, node_options node)
    : connection{connection_group::make(std::move(ex)), std::move(cfg), std::move(events), std::move(node)} {}

connection::connection(std::shared_ptr<connection_group> group, config cfg, connection_events events,
                       node_options node)
    : impl_{std::make_shared<impl>(std::move(group), checked(std::move(cfg)), std::move(events))} {
  impl_->node_ = std::move(node);
  if (!impl_->node_.resolve) impl_->address_ = impl_->cfg_.endpoint();
  impl_->group_->join([weak = std::weak_ptr<impl>{impl_}] {
    if (auto self = weak.lock()) self->start_write();
  });
}

connection::~connection() { stop(); }

connection::executor_type connection::get_executor() const noexcept { return impl_->executor_; }

connection::executor_type connection::io_executor() const noexcept { return impl_->io_executor_; }


void connection::start_run(asio::any_completion_handler<void(error_code)> h) {
  impl_->run_requested_ = true;
  pending_handler<void(error_code)> handler{std::move(h), impl_->homes_};
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
    self->run_handler_ = std::move(handler);
    asio::co_spawn(self->executor_, self->run_loop(), asio::detached);
  });
}

void connection::exec(outgoing out, late_reply_handler late,
                      asio::any_completion_handler<void(error_code, response)> handler) {
  auto e = impl_->make_entry(std::move(out), std::move(late), std::move(handler));
  impl_->install_cancellation(e);
  // From the strand itself (the lock layer) the request is queued, and written if the socket is
  // idle, right away; from anywhere else it hops onto the strand first.
  if (impl_->on_strand()) {
    impl_->submit(std::move(e), false);
    return;
  }
  hop_in(impl_->group_, impl_->executor_, *impl_->group_->completions(),
         [self = impl_, e = std::move(e)]() mutable { self->submit(std::move(e), false); });
}

connection_group& connection::group() const noexcept { return *impl_->group_; }

void connection::subscribe(bool on, std::vector<std::string> channels,
                           asio::any_completion_handler<void(error_code)> h) {
  pending_handler<void(error_code)> handler{std::move(h), impl_->homes_};
  asio::post(impl_->executor_, [self = impl_, on, channels = std::move(channels),
                                handler = std::move(handler)]() mutable {
    if (channels.empty()) {
      handler.complete({});
      return;
    }
    resp::request req;
    if (on) {
      self->channels_.insert(channels.begin(), channels.end());
    } else {
      for (auto const& c : channels) self->channels_.erase(c);
      req.opts().wait_for_connection = false;
    }
    self->push_subscription(req, on, channels);
    auto on_reply = [self, on, channels = std::move(channels), handler = std::move(handler)](
                        error_code ec, response replies) mutable {
      if (!ec) ec = check_replies(replies);
      bool const lost_connection = ec == error::ambiguous || ec == error::not_connected;
      if (on && lost_connection && self->run_state_ != impl::run_state::stopped) {
        // The next handshake subscribes every channel in the set; it confirms this one too.
        self->resubscribe_waiters_.push_back(std::move(handler));
        return;
      }
      if (on && ec) {
        for (auto const& c : channels) self->channels_.erase(c);
      }
      // A channel dropped while disconnected is not subscribed after the reconnect.
      handler.complete(!on && lost_connection ? error_code{} : ec);
    };
    self->submit(self->make_entry(outgoing::from(std::move(req)), {}, std::move(on_reply)), false);
  });
}

connection::handle connection::weak() const {
  handle h;
  h.impl_ = impl_;
  return h;
}

void connection::adopt(entry_ptr e, bool asking) { weak().adopt(e, asking); }

bool connection::handle::adopt(entry_ptr& e, bool asking) const {
  auto const self = impl_.lock();
  if (!self) return false;
  e->st = exec_entry::state::queued;
  e->replies.clear();
  e->asking = asking;
  e->connect_deadline = e->down_deadline = {};
  self->submit(std::move(e), false);
  return true;
}

std::vector<entry_ptr> connection::take_queued() { return impl_->mux_.take_queued(); }

void connection::forget_channel(std::string const& channel) { impl_->channels_.erase(channel); }

void connection::reconnect(std::string why) { weak().reconnect(std::move(why)); }

void connection::handle::reconnect(std::string why) const {
  auto self = impl_.lock();
  if (!self) return;
  auto const ex = self->executor_;
  asio::dispatch(ex, [self = std::move(self), why = std::move(why)]() mutable {
    if (!self->session_open_) return;
    self->reconnect_reason_ = std::move(why);
    // Requests made from now on wait for the next session, not for the one that is ending.
    self->ready_ = false;
    self->mux_.set_ready(false);
    self->stream_.close();
  });
}

void connection::impl::push_subscription(resp::request& req, bool on, std::span<std::string const> channels) const {
  if (!node_.sharded_pubsub) {
    req.push_range(on ? "SUBSCRIBE" : "UNSUBSCRIBE", channels);
    return;
  }
  for (auto const& c : channels) req.push(on ? "SSUBSCRIBE" : "SUNSUBSCRIBE", c);
}

// An unsolicited sunsubscribe (a confirmation that no request of ours waits for) says that the
// node no longer serves the channel's slot.
void connection::impl::on_push(resp::value const& v) {
  auto const e = v.elements();
  if (node_.sharded_pubsub && e.size() >= 2 && e[0].is_string() && e[0].text() == "sunsubscribe" &&
      e[1].is_string()) {
    std::string const channel{e[1].text()};
    if (channels_.erase(channel) > 0 && events_.channel_dropped) events_.channel_dropped(channel);
    return;
  }
  if (events_.push) events_.push(v);
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

std::string connection::address() const { return weak().address(); }

std::string connection::handle::address() const {
  auto const self = impl_.lock();
  if (!self) return {};
  std::lock_guard const lock{self->failure_mutex_};
  return self->address_;
}

std::string connection::last_failure() const {
  std::lock_guard const lock{impl_->failure_mutex_};
  return impl_->last_failure_;
}

connection_stats connection::stats() const noexcept {
  return {impl_->connects_,  impl_->connect_attempts_, impl_->writes_,     impl_->requests_written_,
          impl_->spin_hits_, impl_->spin_misses_,      impl_->health_pings_};
}

error_code check_replies(response const& replies) noexcept {
  for (auto const& r : replies) {
    if (r.is_error()) return server_error_code(r.text());
  }
  return {};
}

}  // namespace redisync::detail::io
