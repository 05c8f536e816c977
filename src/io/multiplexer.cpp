#include "io/multiplexer.hpp"

#include <boost/asio/error.hpp>

#include <algorithm>

namespace redisync::detail::io {

namespace asio = boost::asio;

namespace {

// At most this many adjacent mergeable calls go out as one command, which bounds how long one
// command keeps Redis busy (64 lock calls: a few hundred µs).
constexpr std::size_t calls_per_merged_command = 64;

bool is_confirmation(resp::value const& push) {
  auto const e = push.elements();
  return !e.empty() && e[0].is_string() && resp::is_subscribe_family(e[0].text());
}

// Whether every reply is an error for which `pick` says yes.
template <class Pick>
bool all_errors(response const& replies, Pick pick) {
  if (replies.empty()) return false;
  for (auto const& r : replies) {
    if (!r.is_error() || !pick(error_from_server_text(r.text()))) return false;
  }
  return true;
}

bool all_transient(response const& replies) { return all_errors(replies, is_transient); }

bool all_redirects(exec_entry const& e) {
  return all_errors(e.replies, [asked = e.asked](error code) {
    return code == error::moved || code == error::ask || code == error::read_only || (asked && code == error::try_again);
  });
}

constexpr std::string_view asking_command = "*1\r\n$6\r\nASKING\r\n";

}  // namespace

void multiplexer::stop(error_code reason) {
  stopped_ = true;
  ready_ = false;
  // Later callers learn that there is no connection; after a fatal handshake error, which one.
  stop_reason_ = reason.category() == error_category() ? reason : error_code{error::not_connected};
  for (auto& e : std::exchange(queue_, {})) abandon_unsent(*e, reason);
  for (auto& e : std::exchange(retrying_, {})) {
    if (e->st == exec_entry::state::retry_wait) abandon_unsent(*e, reason);
  }
}

void multiplexer::submit(entry_ptr e, bool priority, clock_type::time_point now) {
  e->replies_left = e->out.replies;
  e->pushes_left = e->out.pushes;
  if (e->retry_deadline == clock_type::time_point{}) {
    auto const own = e->out.opts.retry_limit;
    e->retry_deadline = now + (own && *own < transient_budget_ ? std::max(*own, std::chrono::milliseconds{0}) : transient_budget_);
  }
  if (priority) {
    priority_.push_back(std::move(e));
    return;
  }
  error_code fail;
  if (stopped_) {
    fail = stop_reason_;
  } else if (!ready_ && !e->out.opts.wait_for_connection) {
    fail = error::not_connected;
  } else if (!e->out.empty()) {
    if (!ready_) start_connection_wait(*e, now);
    queue_.push_back(std::move(e));
    return;
  }
  e->st = exec_entry::state::done;
  hooks_.finish_later(std::move(e), fail);
}

void multiplexer::cancel(entry_ptr const& e, asio::cancellation_type type) {
  using enum exec_entry::state;
  switch (e->st) {
    case queued:
      std::erase(queue_, e);
      std::erase(priority_, e);
      abandon_unsent(*e, asio::error::operation_aborted);
      return;
    case retry_wait:
      abandon_unsent(*e, asio::error::operation_aborted);  // dropped from retrying_ when next looked at
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

// Cancelled or stopped before it was (re)sent: the command never reaches Redis. The late handler
// hears so too, so that whoever waits for the late outcome is not left waiting.
void multiplexer::abandon_unsent(exec_entry& e, error_code ec) {
  if (e.late) e.late(ec, {});
  e.late = nullptr;
  finish_with(e, ec);
}

void multiplexer::finish_with(exec_entry& e, error_code ec) {
  e.st = exec_entry::state::done;
  if (e.abandoned) {
    if (e.late) e.late(ec, std::move(e.replies));
    return;
  }
  e.handler.complete(ec, ec ? response{} : std::move(e.replies));
}

std::size_t multiplexer::take_for_write(std::string& out) {
  std::size_t count = 0;
  take(priority_, out, count);
  if (ready_) take(queue_, out, count);
  requests_written_ += count;
  return count;
}

std::vector<entry_ptr> multiplexer::take_queued() {
  std::vector<entry_ptr> taken;
  // Paused after a transient reply first: they were sent before the queued ones.
  for (auto& e : std::exchange(retrying_, {})) {
    if (e->st != exec_entry::state::retry_wait) continue;
    e->st = exec_entry::state::queued;
    taken.push_back(std::move(e));
  }
  taken.insert(taken.end(), std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
  queue_.clear();
  return taken;
}

void multiplexer::take(std::deque<entry_ptr>& from, std::string& out, std::size_t& count) {
  while (!from.empty()) {
    std::size_t calls = 1;
    outgoing const& first = from.front()->out;
    bool const asking = std::exchange(from.front()->asking, false);
    from.front()->asked = asking;
    while (!asking && calls < from.size() && calls < calls_per_merged_command && first.merges_with(from[calls]->out) &&
           !from[calls]->asking) {
      ++calls;
    }
    if (asking) {
      out += asking_command;
      from.front()->asking_sent = true;
    }
    if (calls == 1) {
      out += first.payload;
    } else {
      merging_.clear();
      for (std::size_t i = 0; i < calls; ++i) merging_.push_back(&from[i]->out);
      first.merge.hook->write(out, merging_);
    }
    from.front()->merged = calls;
    for (std::size_t i = 0; i < calls; ++i) {
      entry_ptr e = std::move(from.front());
      from.pop_front();
      e->st = exec_entry::state::written;
      e->connect_deadline = e->down_deadline = {};  // a later wait for a connection starts its own
      ++count;
      if (e->replies_left == 0 && e->pushes_left == 0) {
        e->st = exec_entry::state::done;
        hooks_.finish_later(std::move(e), {});
      } else {
        in_flight_.push_back(std::move(e));
      }
    }
  }
}

std::size_t multiplexer::on_bytes(std::string_view bytes, clock_type::time_point now, error_code& ec) {
  now_ = now;
  std::size_t used = 0;
  while (used < bytes.size()) {
    error_code pec;
    used += parser_.feed(bytes.substr(used), pec);
    if (pec) {
      ec = error::protocol_error;
      return used;
    }
    if (!parser_.has_value()) break;
    on_message(parser_.take_value(), ec);
    if (ec) return used;
  }
  return used;
}

void multiplexer::on_message(resp::value v, error_code& ec) {
  if (v.kind() == resp::type::push) {
    if (is_confirmation(v) && !in_flight_.empty() && in_flight_.front()->pushes_left > 0) {
      auto const& e = in_flight_.front();
      --e->pushes_left;
      e->replies.push_back(std::move(v));
      complete_front_if_done();
    } else if (hooks_.push) {
      hooks_.push(v);
    }
    return;
  }
  if (in_flight_.empty()) {
    ec = error::protocol_error;  // a reply nobody asked for
    return;
  }
  auto const& e = in_flight_.front();
  if (std::exchange(e->asking_sent, false)) return;  // ASKING's +OK
  if (e->out.merge.hook != nullptr) {
    on_item_reply(std::move(v), ec);
    return;
  }
  if (e->replies_left > 0) {
    --e->replies_left;
  } else {
    e->pushes_left = 0;  // an error instead of subscribe confirmations
  }
  e->replies.push_back(std::move(v));
  complete_front_if_done();
}

// The reply to a command that carries one or more mergeable calls: each call gets its own element
// (a call alone gets the whole reply), or every call the reply that failed the whole command
// (NOSCRIPT, BUSY, OOM).
void multiplexer::on_item_reply(resp::value v, error_code& ec) {
  std::size_t const calls = in_flight_.front()->merged;
  if (in_flight_.size() < calls) {
    ec = error::protocol_error;
    return;
  }
  bool const per_call = calls > 1 && v.kind() == resp::type::array && v.elements().size() == calls;
  for (std::size_t i = 0; i < calls; ++i) {
    entry_ptr e = std::move(in_flight_.front());
    in_flight_.pop_front();
    e->replies_left = 0;
    if (per_call) {
      e->replies.push_back(std::move(v.mutable_elements()[i]));
    } else {
      e->replies.push_back(i + 1 == calls ? std::move(v) : v);  // a call alone: no copy
    }
    finish(e);
  }
}

void multiplexer::complete_front_if_done() {
  auto e = in_flight_.front();
  if (e->replies_left != 0 || e->pushes_left != 0) return;
  in_flight_.pop_front();
  finish(e);
}

void multiplexer::finish(entry_ptr const& e) {
  // The command did not run where it went: the router sends it where the server says.
  if (!e->abandoned && hooks_.redirect && e->redirects < max_redirects && all_redirects(*e)) {
    ++e->redirects;
    if (hooks_.redirect(e)) return;
  }
  if (!e->abandoned && e->out.opts.retry_transient && all_transient(e->replies) && now_ < e->retry_deadline) {
    e->st = exec_entry::state::retry_wait;
    e->replies.clear();
    auto const delay = std::min(std::chrono::milliseconds{10 << std::min(e->retries, 6u)},
                                std::chrono::milliseconds{1000});
    ++e->retries;
    e->retry_at = now_ + delay;
    retrying_.push_back(e);
    return;
  }
  finish_with(*e, {});
}

void multiplexer::on_disconnect(clock_type::time_point now) {
  ready_ = false;
  parser_.reset();
  for (auto& e : std::exchange(in_flight_, {})) finish_with(*e, error::ambiguous);
  for (auto& e : std::exchange(priority_, {})) finish_with(*e, error::not_connected);
  std::erase_if(queue_, [&](entry_ptr const& e) {
    if (e->out.opts.wait_for_connection) {
      start_connection_wait(*e, now);
      return false;
    }
    finish_with(*e, error::not_connected);
    return true;
  });
}

void multiplexer::start_connection_wait(exec_entry& e, clock_type::time_point now) const {
  if (e.connect_deadline != clock_type::time_point{}) return;
  auto bounded = [&](std::optional<std::chrono::milliseconds> const& own) {
    return own && *own < connection_wait_ ? std::max(*own, std::chrono::milliseconds{0}) : connection_wait_;
  };
  e.connect_deadline = now + bounded(e.out.opts.connection_wait);
  e.down_deadline = std::min(e.connect_deadline, now + bounded(e.out.opts.connection_wait_when_down));
}

clock_type::time_point multiplexer::connection_deadline(exec_entry const& e) const {
  return down_ ? e.down_deadline : e.connect_deadline;
}

void multiplexer::on_connect_failed(clock_type::time_point now) {
  down_ = true;
  expire_waiting(now);
}

std::optional<clock_type::time_point> multiplexer::next_timer() const {
  std::optional<clock_type::time_point> next;
  for (auto const& e : retrying_) {
    if (e->st == exec_entry::state::retry_wait && (!next || e->retry_at < *next)) next = e->retry_at;
  }
  if (!ready_ && !stopped_) {
    for (auto const& e : queue_) {
      if (!next || connection_deadline(*e) < *next) next = connection_deadline(*e);
    }
  }
  return next;
}

void multiplexer::on_timer(clock_type::time_point now) {
  if (!ready_) expire_waiting(now);
  std::vector<entry_ptr> due;
  std::erase_if(retrying_, [&](entry_ptr const& e) {
    if (e->st != exec_entry::state::retry_wait) return true;
    if (e->retry_at > now) return false;
    due.push_back(e);
    return true;
  });
  for (auto& e : due) {
    e->st = exec_entry::state::queued;
    submit(std::move(e), false, now);
  }
}

void multiplexer::expire_waiting(clock_type::time_point now) {
  std::vector<entry_ptr> expired;
  std::erase_if(queue_, [&](entry_ptr const& e) {
    if (connection_deadline(*e) > now) return false;
    expired.push_back(e);
    return true;
  });
  for (auto& e : expired) finish_with(*e, error::not_connected);
}

}  // namespace redisync::detail::io
