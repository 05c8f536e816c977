#include "sync/acquire_op.hpp"

#include "script/runner.hpp"

#include <algorithm>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/error.hpp>

namespace redisync::detail::sync {

namespace asio = boost::asio;
using io::error_code;

acquire_op::acquire_op(std::shared_ptr<wait_host> host, params p)
    : host_{std::move(host)}, p_{std::move(p)}, started_{host_->now()} {}

acquire_op::~acquire_op() = default;

sync::alarm& acquire_op::wake_alarm() {
  if (!alarm_) alarm_ = host_->make_alarm([this] { on_alarm(); });  // the pending wake-up owns this op
  return *alarm_;
}

// While it waits for something the client keeps (a settled key, a loaded script, a subscription),
// the op is owned by its alarm, which also ends a bounded wait at its deadline.
void acquire_op::wait_for(clock_type::time_point t) { wake_alarm().at(t, shared_from_this()); }

std::string acquire_op::key() const { return hold_key(p_.owner, p_.name); }

clock_type::time_point acquire_op::next_look() const {
  auto const cap = host_->now() + host_->wait_poll_cap();
  return p_.deadline ? std::min(*p_.deadline, cap) : cap;
}

void acquire_op::start() {
  if (!yielded_ && yields_to_arrivals()) {
    yielded_ = true;
    return host_->defer([self = shared_from_this()] { self->start(); });
  }
  if (cancelled()) return finish(asio::error::operation_aborted);
  if (auto ec = check_arguments()) return finish(ec);
  if (auto const why = host_->closed()) return finish(why);
  if (auto const k = key(); host_->unsettled().contains(k)) {
    state_ = state::settling;
    wait_for(next_look());
    host_->unsettled().when_settled(k, [weak = weak_from_this()] {
      if (auto self = weak.lock()) self->begin();
    });
    return;
  }
  begin();
}

void acquire_op::begin() {
  if (state_ != state::idle && state_ != state::settling) return;  // gone while a late outcome was settled
  state_ = state::idle;
  if (auto const why = host_->closed()) return finish(why);
  bool const reentrant = prepare();
  // Inside this client, arrive behind the tasks that already wait: no barging past them.
  if (!reentrant && !p_.once && queues_before_trying()) enqueue();
  if (reentrant || p_.once || queues_on_server() || !host_->has_waiters(p_.channel)) return send_attempt();
  join();
}

std::optional<acquire_op::outcome> acquire_op::read_flag(error_code ec, io::response const& replies,
                                                        std::int64_t& flag) {
  if (ec == error::ambiguous) return outcome{outcome_kind::unknown};
  if (ec) return outcome{outcome_kind::failed, ec};
  if (replies.size() != 1) return outcome{outcome_kind::unreadable};
  auto const& reply = replies[0];
  if (reply.is_error()) return outcome{outcome_kind::failed, server_error_code(reply.text())};
  if (reply.kind() != resp::type::integer || (reply.integer() != 0 && reply.integer() != 1)) {
    return outcome{outcome_kind::unreadable};
  }
  flag = reply.integer();
  return std::nullopt;
}

void acquire_op::send_attempt() {
  if (auto const why = host_->closed()) {
    leave();
    return finish(why);
  }
  if (alarm_) alarm_->cancel();  // the attempt's reply handler owns this op now
  woken = false;
  state_ = state::trying;
  late_ = std::make_shared<late_attempt>();
  auto out = attempt(retry_, reloads_.by_digest());
  sent_ = host_->now();
  // Once a connect attempt has failed, the caller's wait bounds the wait for a connection too:
  // it ends with not_connected (last_connect_failure() says why) when the caller's time is up.
  // A connection still being made (right after start()) is waited for as any request waits.
  // Refusals for now and redirects are retried within it as well; the op tries again after that.
  if (p_.deadline) {
    auto const left = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::max(*p_.deadline - sent_, clock_type::duration::zero()));
    out.opts.connection_wait_when_down = left;
    out.opts.retry_limit = left;
  }
  auto on_reply = [self = shared_from_this()](error_code ec, io::response replies) {
    self->on_reply(ec, std::move(replies));
  };
  io::late_reply_handler late = [self = shared_from_this(), l = late_](error_code ec, io::response replies) {
    self->on_late_reply(l, ec, replies);
  };
  if (attempts_cancellable_) {
    host_->send(attempt_script(), p_.slot, std::move(out), std::move(late),
                asio::bind_cancellation_slot(attempt_cancel_.slot(), std::move(on_reply)));
  } else {
    host_->send(attempt_script(), p_.slot, std::move(out), std::move(late), std::move(on_reply));
  }
}

void acquire_op::on_reply(error_code ec, io::response replies) {
  if (state_ != state::trying) {
    // Ended meanwhile (handed the lock by a release of this client): one level too many if the
    // attempt was granted, so it is undone.
    if (state_ == state::done) abandon(ec, replies);
    return;
  }
  state_ = state::idle;
  if (ec == asio::error::operation_aborted) {
    // Cancelled with the attempt in flight: a grant that arrives later is undone, and the key
    // stays unsettled until then.
    if (!late_->resolved) {
      late_->counted = true;
      host_->unsettled().unsettle(key());
    }
    leave();
    // stop() aborts requests too: the caller learns there is no connection.
    auto const why = host_->closed();
    return finish(why ? why : ec);
  }
  if (auto const why = host_->closed()) {
    // The client is ending: a shutdown releases the holds granted before it began, and fails
    // the acquires still under way, so whatever this attempt did is undone.
    abandon(ec, replies);
    leave();
    return finish(why);
  }
  if (reloads_.must_reload(ec, replies)) return load_then_try_again();
  auto const o = read(ec, replies);
  if (retry_ && (o.what == outcome_kind::granted || o.what == outcome_kind::busy)) {
    host_->emit(event_kind::outcome_resolved, event_level::info, p_.name, p_.owner, {},
                o.what == outcome_kind::granted ? "acquire: held" : "acquire: not held");
  }
  switch (o.what) {
    case outcome_kind::granted:
      leave();
      state_ = state::done;
      return report({}, true);
    case outcome_kind::failed:
      if (auto const budget = host_->refusal_budget(o.ec); budget.count() > 0 && !p_.once && !cancelled()) {
        // Refused for now (it did not run): tried again within the caller's wait, or the budget.
        auto const now = host_->now();
        if (refusals_ == 0) refused_since_ = now;
        auto const until = p_.deadline.value_or(refused_since_ + budget);
        if (now < until) return retry_later(until);
      }
      leave();
      if (retry_) undo_unknown();  // the earlier attempt's outcome is still unknown
      return finish(o.ec);
    case outcome_kind::unknown:
      // The attempt may have gone through (or went through too late to count: a grant whose lease
      // ran out before its reply came). Trying again in its idempotent form settles it, renewing
      // the lease of a grant that stands; if time is up instead, it is undone should it have run.
      if (expired() || cancelled()) {
        undo_unknown();
        leave();
        return finish(cancelled() ? error_code{asio::error::operation_aborted} : error_code{});
      }
      retry_ = true;
      return send_attempt();
    case outcome_kind::unreadable:
      // A reply that cannot be read may still have come from a grant: undone before the error.
      leave();
      state_ = state::idle;
      return undo([self = shared_from_this()] { self->finish(error::unexpected_reply); });
    case outcome_kind::busy: return on_busy(o.bound);
  }
}

// Once the node has the script, the same attempt goes again. A wait of zero still makes its one
// attempt: the load is part of it, as the connection is.
void acquire_op::load_then_try_again() {
  state_ = state::loading;
  if (!p_.once) wait_for(next_look());
  host_->when_loaded(attempt_script(), p_.slot, [self = shared_from_this()](error_code lec) {
    if (self->state_ != state::loading) return;
    self->state_ = state::idle;
    if (lec) {
      self->leave();
      return self->finish(lec);
    }
    if (!self->p_.once && self->expired()) {  // the time ran out while it loaded: no attempt now
      self->leave();
      return self->finish({});
    }
    self->send_attempt();
  });
}

// The attempt goes again after a pause that grows, until `until`; the last one goes then, and its
// refusal is the caller's error.
void acquire_op::retry_later(clock_type::time_point until) {
  state_ = state::sleeping;
  auto const pause = std::min(std::chrono::milliseconds{10 << std::min(refusals_++, 6u)}, std::chrono::milliseconds{1000});
  wait_for(std::min(host_->now() + pause, until));
}

void acquire_op::abandon(error_code ec, io::response const& replies) {
  late_->counted = true;
  host_->unsettled().unsettle(key());
  on_late_reply(late_, ec, replies);
}

void acquire_op::on_late_reply(std::shared_ptr<late_attempt> const& late, error_code ec, io::response const& replies) {
  undo_late_grant(ec, replies, [self = shared_from_this(), late] {
    late->resolved = true;
    if (late->counted) self->host_->unsettled().settle(self->key());
  });
}

void acquire_op::on_busy(std::chrono::milliseconds bound) {
  retry_ = false;
  refusals_ = 0;
  // When the holder's lease ends at the latest: the head sleeps no longer than this.
  auto const cap = host_->wait_poll_cap();
  auto const wait = bound.count() >= 0 && bound < cap ? bound : cap;
  bound_at_ = host_->now() + wait;
  host_->queue(p_.channel).expected_free = bound_at_;
  if (cancelled()) {  // a cancellation that the written attempt ignored
    leave();
    return finish(asio::error::operation_aborted);
  }
  if (expired() || p_.once) {
    leave();
    return finish({});
  }
  if (p_.spin) {
    if (!queued()) enqueue();  // no channel to join: it looks again by itself
  } else if (!queued() || !subscribed_) {
    return join();
  }
  if (woken && !handoff_pending) return send_attempt();  // a message came while it tried
  sleep();
}

// Subscribe, then try again: an unlock published between the failed try and the subscription
// would otherwise be missed. Without a subscription (an error), waiting still ends at the bound.
void acquire_op::enqueue() {
  auto& queue = host_->queue(p_.channel);
  queue.policy = policy();
  queue.push_back(shared_from_this());
  host_->count_waiter(1);
}

void acquire_op::join() {
  if (!queued()) enqueue();
  state_ = state::subscribing;
  wait_for(next_look());
  auto on_confirmed = [weak = weak_from_this(), host = std::weak_ptr<wait_host>{host_}, channel = p_.channel](error_code ec) {
    if (auto self = weak.lock()) return self->on_subscribed(ec);
    if (auto h = host.lock()) h->unsubscribe(channel);  // the op is gone: so is its reference
  };
  joining_ = true;
  host_->subscribe(p_.channel, p_.slot, std::move(on_confirmed));
  joining_ = false;
}

void acquire_op::on_subscribed(error_code) {
  subscribed_ = true;
  if (state_ != state::subscribing) {
    if (state_ == state::done) {  // gone meanwhile: the reference it took goes too
      host_->unsubscribe(p_.channel);
      subscribed_ = false;
    }
    return;
  }
  state_ = state::idle;
  // Chosen for a hand-off while it subscribed: the lock is on its way, and an attempt now would
  // take a second level.
  if (handoff_pending) return sleep();
  if (queues_on_server()) {
    // Messages and replies share the connection: a subscription confirmed before the busy reply
    // came missed no message since the attempt ran. One confirmed later may have: look again. So
    // does a waiter asked to try while its attempt was out: the release that woke it may have run
    // after the attempt (in the same script call, whose reply comes after the message).
    if (!joining_ || woken) return send_attempt();
    return sleep();
  }
  // The head tries; so does a waiter woken while it subscribed (a policy that wakes more than one).
  if (woken || host_->queue(p_.channel).is_head(*this)) return send_attempt();
  sleep();
}

void acquire_op::sleep() {
  // A reply or a confirmation handled after stop() or during a shutdown: nothing would wake it.
  if (auto const why = host_->closed()) {
    leave();
    return finish(why);
  }
  state_ = state::sleeping;
  auto const now = host_->now();
  auto wake_at = now + host_->wait_poll_cap();
  if (p_.deadline) wake_at = std::min(wake_at, *p_.deadline);
  auto& q = host_->queue(p_.channel);
  if (queues_on_server()) {
    if (q.passed_over && q.is_head(*this)) {
      q.passed_over = false;
      bound_at_ = std::min(bound_at_, now + look_after_passed_over());
    }
    wake_at = std::min(wake_at, std::max(bound_at_, now + std::chrono::milliseconds{1}));
  } else if (!handoff_pending && q.is_head(*this)) {
    wake_at = std::min({wake_at, std::max(q.expected_free, now + std::chrono::milliseconds{1}), now + p_.recheck});
  }
  // A spinner hears no message: those that would try on one look again by themselves.
  if (p_.spin && !handoff_pending && (queues_on_server() || q.is_head(*this))) {
    wake_at = std::min(wake_at, now + std::chrono::duration_cast<clock_type::duration>(spin_.next()));
  }
  wait_for(wake_at);
}

void acquire_op::on_alarm() {
  switch (state_) {
    case state::sleeping:
      state_ = state::idle;
      if (handoff_pending) return sleep();  // the lock is on its way
      return send_attempt();
    case state::settling:
    case state::loading:
    case state::subscribing:
      if (expired() && !handoff_pending) {
        leave();
        return finish({});
      }
      return wait_for(next_look());
    case state::idle:
    case state::trying:
    case state::done: return;
  }
}

void acquire_op::on_wake(bool asked) {
  if (state_ != state::sleeping) return;  // an attempt that ends looks at `woken` itself
  if (asked && !handoff_pending) {
    wake_alarm().cancel();
    state_ = state::idle;
    return send_attempt();
  }
  sleep();  // it may lead now: its bound changes
}

void acquire_op::handed_over() {
  handoff_pending = false;
  if (alarm_) alarm_->cancel();
  leave();
  state_ = state::done;
  report({}, true);
}

void acquire_op::confirm_grant() {
  handoff_pending = false;
  state_ = state::idle;
  retry_ = true;
  send_attempt();
}

void acquire_op::cancel(asio::cancellation_type type) {
  cancelled_ |= type;
  switch (state_) {
    case state::trying:
      // Unwritten, the attempt is dropped; written, terminal and partial cancellation abandon it
      // (its late reply handler undoes a grant) and total cancellation waits for its reply.
      if (attempts_cancellable_) attempt_cancel_.emit(type);
      return;
    case state::settling:
    case state::loading:
    case state::subscribing:
    case state::sleeping:
      leave();
      return finish(asio::error::operation_aborted);
    case state::idle:
    case state::done: return;
  }
}

void acquire_op::leave() {
  if (alarm_) alarm_->cancel();
  if (queued()) {
    host_->queue(p_.channel).remove(*this);
    host_->count_waiter(-1);
  }
  host_->drop_queue_if_empty(p_.channel);
  if (subscribed_) {
    host_->unsubscribe(p_.channel);
    subscribed_ = false;
  }
}

// An attempt whose outcome is unknown is undone, should it have run, before the owner's next
// acquire or release of the name counts levels.
void acquire_op::undo_unknown() {
  auto const k = key();
  host_->unsettled().unsettle(k);
  undo([host = host_, k] { host->unsettled().settle(k); });
}

void acquire_op::finish(error_code ec) {
  state_ = state::done;
  report(ec, false);
}

void acquire_op::report(error_code ec, bool held) {
  if (auto const counted = p_.counted ? counted_as() : std::nullopt) {
    host_->metrics().acquire_ended(*counted, p_.name, metrics::outcome_of(ec, held), host_->now() - started_);
  }
  complete(ec, held);
}

}  // namespace redisync::detail::sync
