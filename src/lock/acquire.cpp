// Acquiring a reentrant lock: try, and while another owner holds it, wait in this client's queue
// for an unlock message (or a hand-over from a local release), bounded by the lock's PTTL.

#include "lock/client_core.hpp"

#include <scripts.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/this_coro.hpp>

namespace redisync::detail {

namespace asio = boost::asio;

acquire_reply read_acquire_reply(resp::value const& reply) {
  using outcome = acquire_reply::outcome;
  // Tokens travel as decimal strings (see next_token.lua); counts and PTTLs as integers.
  std::int64_t token = 0;
  if (reply.is_string()) {
    if (!reply.as_integer(token) || token <= 0) return {};
    return {outcome::held, static_cast<std::uint64_t>(token), 1};
  }
  if (reply.kind() != resp::type::array) return {};
  auto const e = reply.elements();
  if (e.size() == 1 && e[0].kind() == resp::type::integer) {
    return {outcome::busy, 0, 0, e[0].integer()};
  }
  if (e.size() == 2 && e[0].is_string() && e[0].as_integer(token) && token >= 0 &&
      e[1].kind() == resp::type::integer && e[1].integer() >= 1 && e[1].integer() <= max_hold_count) {
    return {outcome::held, static_cast<std::uint64_t>(token), e[1].integer()};
  }
  return {};
}

namespace {

// A whole acquire response: one reply, or it is unexpected.
acquire_reply read_acquire_response(response const& replies) {
  return replies.size() == 1 ? read_acquire_reply(replies[0]) : acquire_reply{};
}

// Whether an acquire that completed with `ec` and `replies` may have added a level: its outcome is
// unknown (a lost connection, or a reply that cannot be read), or it granted one. A server error
// reply means the script wrote nothing (each item reads before it writes).
bool may_have_granted(error_code ec, response const& replies) {
  if (ec) return ec == error::ambiguous;
  if (replies.size() == 1 && replies[0].is_error()) return false;
  return read_acquire_response(replies).what != acquire_reply::outcome::busy;
}

// The outcome of an acquire script whose caller gave up while it was in flight.
struct late_acquire {
  std::weak_ptr<client_core> core;
  std::shared_ptr<hold_state const> hold;  // its name and owner
  std::int64_t count_before = 0;
  bool resolved = false;  // the late outcome has been dealt with
  bool counted = false;   // the caller marked the key unsettled and waits for this
};

late_reply_handler make_late_handler(std::shared_ptr<late_acquire> late) {
  return [late](error_code ec, response replies) {
    auto core = late->core.lock();
    if (!core) return;
    bool const maybe_granted = may_have_granted(ec, replies);
    auto finish = [late, core] {
      late->resolved = true;
      if (late->counted) core->settle(late->hold->key);
    };
    if (!maybe_granted) {
      finish();
      return;
    }
    auto undo = core->undo_acquire(late->hold->name, late->hold->owner, late->count_before);
    asio::co_spawn(core->strand(), std::move(undo), [finish](std::exception_ptr) { finish(); });
  };
}

template <class Signature>
void complete_acquire(pending_handler<Signature>& handler, acquire_result r) {
  std::apply([&](auto&&... a) { handler.complete(std::move(a)...); },
             to_completion(std::move(r), static_cast<Signature*>(nullptr)));
}

template <class Signature>
void acquire_slowly(std::shared_ptr<client_core> const& self, acquire_args a,
                    pending_handler<Signature> handler,
                    std::shared_ptr<forwarded_cancellation> cancel) {
  auto convert = [](acquire_result r) { return to_completion(std::move(r), static_cast<Signature*>(nullptr)); };
  self->launch(self->acquire(std::move(a)), std::move(handler), std::move(cancel), convert);
}

// The fast path: one acquire script call, completed from its reply callback when it grants the
// lock. Any other outcome continues in the acquire coroutine with what the attempt learnt.
template <class Signature>
void acquire_at_once(std::shared_ptr<client_core> const& self, acquire_args a,
                     pending_handler<Signature> handler,
                     std::shared_ptr<forwarded_cancellation> cancel) {
  auto& core = *self;
  std::string key = hold_key(a.owner, a.name);
  std::string channel = channel_of(a.name);
  bool const valid = !validate_name(a.name) && !validate_owner(a.owner) &&
                     (!a.lease || !validate_duration(*a.lease, false)) &&
                     (!a.wait || !validate_duration(*a.wait, true));
  if (!valid || core.stopped || core.unsettled.contains(key) || core.find_hold(key) ||
      core.queues.contains(channel)) {
    acquire_slowly(self, std::move(a), std::move(handler), std::move(cancel));
    return;
  }
  auto hold = core.new_hold(a, std::move(key), std::move(channel));
  // Armed before the acquire is sent: the first renewal cannot be late.
  if (hold->watchdog) core.schedule_renewal(hold, clock_type::now());
  auto late = std::make_shared<late_acquire>(late_acquire{self, hold, 0});
  auto request = script_request(scripts::lock_calls, {hold->name, hold->token_key},
                                {"acquire", hold->owner, std::to_string(hold->lease.count())});
  auto const sent = clock_type::now();
  auto slot = cancel ? cancel->signal.slot() : asio::cancellation_slot{};
  auto on_reply = [self, a = std::move(a), handler = std::move(handler), cancel, hold, late,
                   sent](error_code ec, response replies) mutable {
    auto& core = *self;
    if (ec == asio::error::operation_aborted) {
      // Cancelled with the script in flight: as in the coroutine, a late grant is undone.
      if (!late->resolved) {
        late->counted = true;
        core.unsettle(hold->key);
      }
      core.wheel.cancel(hold->renewal_entry);
      complete_acquire(handler, {core.stopped ? error_code{error::not_connected} : ec, std::nullopt});
      return;
    }
    auto const reply = ec ? acquire_reply{} : read_acquire_response(replies);
    if (reply.what == acquire_reply::outcome::held) {
      core.grant(hold, reply.token, reply.count, sent);
      complete_acquire(handler, {error_code{}, core.guard_for(hold)});
      return;
    }
    core.wheel.cancel(hold->renewal_entry);
    if (cancel && cancel->emitted != asio::cancellation_type::none) {
      // Cancelled while the attempt ran, with a type the written command ignored.
      if (ec == error::ambiguous) {
        asio::co_spawn(core.strand(), core.undo_acquire(a.name, a.owner, 0), asio::detached);
      }
      complete_acquire(handler, {asio::error::operation_aborted, std::nullopt});
      return;
    }
    if (reply.what == acquire_reply::outcome::busy) a.first_pttl = reply.pttl;
    // Any other reply (a server error, NOSCRIPT) or failure: the coroutine tries again and reports,
    // idempotently if this attempt may have gone through.
    a.first_ambiguous = reply.what != acquire_reply::outcome::busy && may_have_granted(ec, replies);
    acquire_slowly(self, std::move(a), std::move(handler), std::move(cancel));
  };
  core.conn.exec(std::move(request), make_late_handler(late),
                 asio::bind_cancellation_slot(slot, std::move(on_reply)));
}

}  // namespace

template <class Signature>
void client_core::start_acquire(acquire_args a, asio::any_completion_handler<Signature> h) {
  pending_handler<Signature> handler{std::move(h), completion_executor};
  auto cancel = forward_cancellation(handler);
  auto attempt = [self = shared_from_this(), a = std::move(a), handler = std::move(handler),
                  cancel = std::move(cancel)]() mutable {
    acquire_at_once(self, std::move(a), std::move(handler), std::move(cancel));
  };
  asio::dispatch(strand(), std::move(attempt));
}

template void client_core::start_acquire(acquire_args, asio::any_completion_handler<void(error_code, held)>);
template void client_core::start_acquire(
    acquire_args, asio::any_completion_handler<void(error_code, std::optional<held>)>);

asio::awaitable<void> client_core::undo_acquire(std::string name, std::string owner,
                                                std::int64_t count_before) {
  auto self = shared_from_this();
  script_args args{{name, token_key_of(name)},
                   {"release-with", owner, std::to_string(conn.cfg().watchdog_lease.count()),
                    channel_of(name), std::to_string(count_before + 1), "", ""}};
  // The expected count makes this safe to repeat: it releases only the level that acquire added.
  for (;;) {
    auto [ec, reply] = co_await run_script(conn, scripts::lock_calls, args);
    if (ec == error::ambiguous && !stopped) continue;
    if (!ec && parse_release_reply(reply, std::nullopt).remaining >= 0) {
      emit(event_kind::grant_undone, event_level::info, name, owner);
    }
    co_return;
  }
}

asio::awaitable<acquire_result> client_core::acquire(acquire_args a) {
  using result = acquire_result;
  auto self = shared_from_this();
  co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
  co_await asio::this_coro::throw_if_cancelled(false);
  asio::cancellation_state const cs = co_await asio::this_coro::cancellation_state;

  if (auto ec = validate_name(a.name)) co_return result{ec, std::nullopt};
  if (auto ec = validate_owner(a.owner)) co_return result{ec, std::nullopt};
  if (a.lease) {
    if (auto ec = validate_duration(*a.lease, false)) co_return result{ec, std::nullopt};
  }
  if (a.wait) {
    if (auto ec = validate_duration(*a.wait, true)) co_return result{ec, std::nullopt};
  }
  if (stopped) co_return result{error::not_connected, std::nullopt};

  auto const& cfg = conn.cfg();
  auto const deadline = a.wait ? a.started + *a.wait : clock_type::time_point::max();
  std::string const key = hold_key(a.owner, a.name);
  std::string const channel = channel_of(a.name);
  if (unsettled.contains(key)) co_await wait_settled(key);

  auto hold = find_hold(key);
  bool const reentrant = hold != nullptr;
  if (!reentrant) hold = new_hold(a, key, channel);
  // A nested acquire keeps the lease of the hold it nests in.
  std::string const lease_text = std::to_string(hold->lease.count());

  // Inside this client, arrive behind the tasks that already wait: no barging past them.
  bool try_now = true;
  if (!reentrant && !(a.wait && a.wait->count() == 0)) {
    auto it = queues.find(channel);
    try_now = it == queues.end() || it->second.empty();
  }

  std::shared_ptr<waiter> w;
  bool subscribed = false;
  std::optional<std::int64_t> count_before_lost_attempt;
  if (a.first_ambiguous) count_before_lost_attempt = 0;
  auto note_holder = [&](std::int64_t pttl) {
    // A key without expiry (-1), or a PTTL beyond the cap, is looked at again after the cap.
    auto const bound = pttl >= 0 && pttl < cfg.wait_poll_cap.count() ? std::chrono::milliseconds{pttl}
                                                                      : cfg.wait_poll_cap;
    queues[channel].expected_free = clock_type::now() + bound;
  };
  if (a.first_pttl) {
    note_holder(*a.first_pttl);
    try_now = false;
  }

  auto leave = [&] {
    if (w) {
      w->done = true;
      if (w->queued) queues[channel].remove(*w);
      --waiters_count;
      w.reset();
    }
    drop_queue_if_empty(channel);
    if (subscribed) subs.release(channel);
    subscribed = false;
    if (!hold->granted) wheel.cancel(hold->renewal_entry);
  };
  auto held_now = [&](std::uint64_t token, std::int64_t count, clock_type::time_point sent) {
    grant(hold, token, count, sent);
    leave();
    return result{error_code{}, guard_for(hold)};
  };

  for (;;) {
    if (w && w->granted) co_return held_now(w->granted->token, 1, w->granted->sent);
    if (stopped) {
      leave();
      co_return result{error::not_connected, std::nullopt};
    }
    if (try_now) {
      if (w) w->woken = false;
      // Armed before the acquire is sent: the first renewal cannot be late.
      if (!hold->granted && hold->watchdog) schedule_renewal(hold, clock_type::now());
      auto late =
          std::make_shared<late_acquire>(late_acquire{self, hold, reentrant ? hold->count : 0});
      script_args args{{a.name, token_key_of(a.name)}, {"acquire", a.owner, lease_text}};
      if (count_before_lost_attempt) {
        args.argv[0] = "retry-acquire";
        args.argv.push_back(std::to_string(*count_before_lost_attempt));
      }
      auto const late_handler = make_late_handler(late);
      auto const sent = clock_type::now();
      auto [ec, reply] = co_await run_script(conn, scripts::lock_calls, args, late_handler);
      if (ec == asio::error::operation_aborted) {
        // Cancelled with the script in flight: a grant that arrives later is undone, and the
        // key stays unsettled until then.
        if (!late->resolved) {
          late->counted = true;
          unsettle(key);
        }
        leave();
        // stop() aborts requests too: the caller learns there is no connection.
        co_return result{stopped ? error_code{error::not_connected} : ec, std::nullopt};
      }
      if (ec == error::ambiguous) {
        // The attempt may have gone through. Trying again with the count it started from is
        // idempotent (acquire.lua); if time is up instead, undo it should it have run.
        std::int64_t const before = reentrant ? hold->count : 0;
        if (clock_type::now() >= deadline || cs.cancelled() != asio::cancellation_type::none) {
          asio::co_spawn(strand(), undo_acquire(a.name, a.owner, before), asio::detached);
          leave();
          co_return result{cs.cancelled() != asio::cancellation_type::none
                               ? error_code{asio::error::operation_aborted}
                               : error_code{},
                           std::nullopt};
        }
        count_before_lost_attempt = before;
        continue;
      }
      if (ec) {
        leave();
        co_return result{ec, std::nullopt};
      }
      auto const answer = read_acquire_reply(reply);
      if (answer.what == acquire_reply::outcome::held) {
        co_return held_now(answer.token, answer.count, sent);
      }
      if (answer.what != acquire_reply::outcome::busy) {
        // A reply that cannot be read may still have come from a grant: undone before the error.
        leave();
        co_await undo_acquire(a.name, a.owner,
                              count_before_lost_attempt.value_or(reentrant ? hold->count : 0));
        co_return result{error::unexpected_reply, std::nullopt};
      }
      count_before_lost_attempt.reset();
      note_holder(answer.pttl);
      if (!hold->granted) wheel.cancel(hold->renewal_entry);
      if (w && w->granted) continue;
    }
    if (clock_type::now() >= deadline) {
      leave();
      co_return result{error_code{}, std::nullopt};
    }
    if (!w) {
      w = std::make_shared<waiter>(io(), a.owner, hold->lease, hold->watchdog);
      queues[channel].push_back(w);
      ++waiters_count;
      // Subscribe, then try again: an unlock published between the failed try and the
      // subscription would otherwise be missed. Without a subscription (an error), waiting
      // still ends at the PTTL.
      co_await subs.acquire(channel);
      subscribed = true;
      if (w->granted) continue;
      if (cs.cancelled() != asio::cancellation_type::none) {
        leave();
        co_return result{asio::error::operation_aborted, std::nullopt};
      }
      try_now = queues[channel].is_head(*w);
      if (try_now) continue;
    }

    auto& queue = queues[channel];
    auto const now = clock_type::now();
    auto wake_at = std::min(deadline, now + cfg.wait_poll_cap);
    if (!w->handoff_pending && queue.is_head(*w)) {
      wake_at = std::min(wake_at, std::max(queue.expected_free, now + std::chrono::milliseconds{1}));
    }
    co_await w->sleep_until(wake_at, asio::deferred);
    if (w->granted) continue;
    if (cs.cancelled() != asio::cancellation_type::none) {
      leave();
      co_return result{asio::error::operation_aborted, std::nullopt};
    }
    try_now = !w->handoff_pending && (w->woken || clock_type::now() >= wake_at);
  }
}

}  // namespace redisync::detail
