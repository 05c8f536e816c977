// Releasing, force-releasing and inspecting a lock.

#include "connection/exec_one.hpp"
#include "lock/client_core.hpp"

#include <scripts.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>

namespace redisync::detail {

namespace asio = boost::asio;

release_outcome parse_release_reply(resp::value const& reply,
                                    std::optional<std::int64_t> count_before_lost_attempt) {
  release_outcome out;
  std::int64_t token = 0;
  if (reply.kind() == resp::type::array && reply.elements().size() == 2) {
    auto const& e = reply.elements();
    if (e[0].kind() != resp::type::integer || e[0].integer() != 0) return out;
    if (e[1].is_error()) {
      // Deleted, but the unlock message was refused.
      out.refused_publish = std::string{e[1].text()};
      out.remaining = 0;
    } else if (e[1].is_string() && e[1].as_integer(token) && token >= 0) {
      // A hand-off: {0, token}, the token a decimal string like every token (next_token.lua).
      out.handoff_token = static_cast<std::uint64_t>(token);
      out.remaining = 0;
    }
  } else if (reply.kind() == resp::type::integer && reply.integer() >= -2 &&
             reply.integer() < max_hold_count) {
    out.remaining = reply.integer();
    if (out.remaining == -2 && count_before_lost_attempt) {
      out.remaining = *count_before_lost_attempt - 1;  // the lost attempt went through
    }
  }
  return out;
}

error_code client_core::finish_release(std::string const& name, std::shared_ptr<hold_state> const& hold,
                                       std::shared_ptr<hold_level> const& level,
                                       std::string const& channel, release_outcome const& out,
                                       clock_type::time_point sent) {
  if (!out.handoff_token && out.remaining == 0) {
    if (auto it = queues.find(channel); it != queues.end()) it->second.consecutive_handoffs = 0;
  }
  if (out.remaining < -1) return error::unexpected_reply;
  if (out.remaining == -1) {
    // Nothing changed and nothing was published. If we believed we held it, the lease ran out.
    if (hold) {
      lose(hold);
      return error::lease_lost;
    }
    return error::not_owner;
  }
  if (out.refused_publish) {
    // The release stands; only other clients' waiters were not told (they wake at the PTTL).
    emit(event_kind::waiters_not_notified, event_level::warning, name, hold ? hold->owner : "",
         error::no_permission, *out.refused_publish);
    wake_first_waiter(channel);
  }
  if (!hold) return {};
  if (level) {
    level->state = level_state::released;
    std::erase(hold->levels, level);
  }
  if (out.remaining == 0 || hold->levels.empty()) {
    // The levels left on the server, if any, belong to no guard of this client: not renewed.
    finish_hold(hold);
    return {};
  }
  hold->count = out.remaining;
  hold->set_valid_until(validity_deadline(sent, hold->lease));
  if (hold->watchdog && hold->application_holds()) schedule_renewal(hold, sent);
  schedule_validity_check(hold);
  return {};
}

asio::awaitable<error_code> client_core::release_level(std::string const& name,
                                                       std::string const& owner,
                                                       std::shared_ptr<hold_state> const& hold,
                                                       std::shared_ptr<hold_level> const& level,
                                                       bool after_ambiguous, bool may_hand_off) {
  auto self = shared_from_this();
  std::string const channel = channel_of(name);
  // The last level goes straight to the first waiter of this client, if there is one.
  std::shared_ptr<waiter> target;
  if (may_hand_off && hold && hold->count == 1) {
    auto it = queues.find(channel);
    if (it != queues.end() && it->second.consecutive_handoffs < conn.cfg().max_local_handoffs) {
      if (auto head = it->second.head(); head && !head->handoff_pending) {
        target = head;
        target->woken = false;
        target->handoff_pending = true;
        it->second.remove(*target);
      }
    }
  }
  auto give_back = [&] {
    target->handoff_pending = false;
    if (!target->done) {
      queues[channel].push_front(target);
      target->wake();
    }
  };

  std::string const lease_text =
      std::to_string((hold ? hold->lease : conn.cfg().watchdog_lease).count());
  std::optional<std::int64_t> count_before_lost_attempt;
  if (after_ambiguous && hold) count_before_lost_attempt = hold->count;
  // An unreadable reply leaves the outcome unknown, like a lost connection; a server that keeps
  // sending them gets the error after a few tries.
  int unreadable_left = 3;
  clock_type::time_point sent;
  release_outcome outcome;
  for (;;) {
    script_args args{{name}, {"release", owner, lease_text, channel}};
    if (count_before_lost_attempt || target) {
      args.keys.push_back(token_key_of(name));
      args.argv[0] = "release-with";
      args.argv.push_back(count_before_lost_attempt ? std::to_string(*count_before_lost_attempt) : "");
      args.argv.push_back(target ? target->owner : "");
      args.argv.push_back(target ? std::to_string(target->lease.count()) : "");
    }
    sent = clock_type::now();
    auto [ec, reply] = co_await run_script(conn, scripts::lock_calls, args);
    if (!ec) {
      outcome = parse_release_reply(reply, count_before_lost_attempt);
      if (outcome.remaining < -1 && --unreadable_left > 0) ec = error::ambiguous;
    }
    if (ec == error::ambiguous && hold && hold->active() && !stopped) {
      // Repeating with the count it started from is idempotent (release.lua).
      count_before_lost_attempt = hold->count;
      continue;
    }
    if (ec && target && ec != error::ambiguous) {
      // The server refused the hand-off (its new fencing token: out of memory, TOKENLIMIT); a
      // plain release writes nothing new. The waiter tries when the unlock message comes.
      give_back();
      target.reset();
      continue;
    }
    if (ec) {
      if (target) give_back();
      co_return ec;
    }
    break;
  }

  if (target) {
    target->handoff_pending = false;
    if (outcome.handoff_token) {
      ++handoffs;
      auto& q = queues[channel];
      ++q.consecutive_handoffs;
      if (target->done) {
        // The waiter gave up while the lock was on its way: pass it on or free it.
        release_detached(name, target->owner, nullptr, nullptr);
      } else {
        target->granted = handoff_grant{*outcome.handoff_token, sent};
      }
    } else if (!target->done) {
      queues[channel].push_front(target);
      target->wake();
    }
  }
  auto const ec = finish_release(name, hold, level, channel, outcome, sent);
  if (target && target->granted) target->resume_now();  // last: it may run the new holder's code
  co_return ec;
}

asio::awaitable<std::tuple<error_code>> client_core::release(std::string name, std::string owner,
                                                             std::shared_ptr<hold_state> guard,
                                                             std::shared_ptr<hold_level> level,
                                                             bool after_ambiguous) {
  using result = std::tuple<error_code>;
  auto self = shared_from_this();
  if (auto ec = validate_name(name)) co_return result{ec};
  if (auto ec = validate_owner(owner)) co_return result{ec};
  if (guard && !guard->active()) co_return result{error::lease_lost};
  std::string const key = hold_key(owner, name);
  if (unsettled.contains(key)) co_await wait_settled(key);
  auto hold = guard ? guard : find_hold(key);
  if (hold && !hold->active()) co_return result{error::lease_lost};
  if (hold && !level) {
    // Through the lock handle: the innermost level a guard of this client holds.
    level = hold->let_go_innermost();
    if (!level) co_return result{error::not_held};
  }
  // The application lets go: no renewal may follow the release unless it holds another level.
  if (hold && !hold->application_holds()) wheel.cancel(hold->renewal_entry);

  auto const ec = co_await release_level(name, owner, hold, level, after_ambiguous, true);
  if (ec && hold && hold->active() && level && level->state == level_state::releasing) {
    emit(event_kind::release_failed, event_level::warning, name, owner, ec);
    asio::co_spawn(strand(), retry_release(hold, level), asio::detached);
  }
  co_return result{ec};
}

asio::awaitable<void> client_core::retry_release(std::shared_ptr<hold_state> hold,
                                                 std::shared_ptr<hold_level> level) {
  auto self = shared_from_this();
  asio::steady_timer pause{io()};
  std::chrono::milliseconds delay{50};
  for (;;) {
    pause.expires_after(delay);
    co_await pause.async_wait(asio::as_tuple(asio::deferred));
    if (stopped || !hold->active() || level->state != level_state::releasing) co_return;
    auto const ec = co_await release_level(hold->name, hold->owner, hold, level, false, false);
    if (!ec) {
      emit(event_kind::release_retried, event_level::info, hold->name, hold->owner);
      co_return;
    }
    delay = std::min(delay * 2, std::chrono::milliseconds{1000});
  }
}

void client_core::start_release(std::string name, std::string owner,
                                std::shared_ptr<hold_state> guard, std::shared_ptr<hold_level> level,
                                asio::any_completion_handler<void(error_code)> h) {
  pending_handler<void(error_code)> handler{std::move(h), completion_executor};
  auto attempt = [self = shared_from_this(), name = std::move(name), owner = std::move(owner),
                  guard = std::move(guard), level = std::move(level),
                  handler = std::move(handler)]() mutable {
    self->release_at_once(std::move(name), std::move(owner), std::move(guard), std::move(level),
                          std::move(handler));
  };
  asio::dispatch(strand(), std::move(attempt));
}

void client_core::release_at_once(std::string name, std::string owner,
                                  std::shared_ptr<hold_state> guard,
                                  std::shared_ptr<hold_level> level,
                                  pending_handler<void(error_code)> handler) {
  auto hold = guard ? guard : find_hold(hold_key(owner, name));
  // The fast path: a guard's last level, with nobody of this client waiting to be handed the lock.
  bool const last_level_alone = hold && level && hold->active() && hold->count == 1 &&
                                hold->levels.size() == 1 && !stopped &&
                                !unsettled.contains(hold->key) && !queues.contains(hold->channel);
  if (!last_level_alone) {
    launch(release(std::move(name), std::move(owner), std::move(guard), std::move(level)),
           std::move(handler), nullptr, as_is);
    return;
  }
  wheel.cancel(hold->renewal_entry);  // no renewal may follow the release
  auto request = script_request(scripts::lock_calls, {hold->name},
                                {"release", hold->owner, std::to_string(hold->lease.count()),
                                 hold->channel});
  auto const sent = clock_type::now();
  auto on_reply = [self = shared_from_this(), guard = std::move(guard), level = std::move(level),
                   hold, sent, handler = std::move(handler)](error_code ec, response replies) mutable {
    if (!ec && replies.size() == 1 && !replies[0].is_error()) {
      auto const outcome = parse_release_reply(replies[0], std::nullopt);
      if (outcome.remaining >= -1) {
        handler.complete(self->finish_release(hold->name, hold, level, hold->channel, outcome, sent));
        return;
      }
    }
    // A lost connection, a server error, NOSCRIPT, an unreadable reply: the coroutine tries again
    // (idempotently where the outcome is unknown) and reports.
    bool const unknown = ec == error::ambiguous || (!ec && replies.size() == 1 && !replies[0].is_error());
    self->launch(self->release(hold->name, hold->owner, std::move(guard), std::move(level), unknown),
                 std::move(handler), nullptr, as_is);
  };
  conn.exec(std::move(request), std::move(on_reply));
}

void client_core::release_detached(std::string name, std::string owner,
                                   std::shared_ptr<hold_state> guard,
                                   std::shared_ptr<hold_level> level) {
  start_release(std::move(name), std::move(owner), std::move(guard), std::move(level),
                asio::any_completion_handler<void(error_code)>{[](error_code) {}});
}

asio::awaitable<std::tuple<error_code>> client_core::wait_lost(std::shared_ptr<hold_state> hold) {
  auto self = shared_from_this();
  if (hold->active()) {
    asio::steady_timer timer{io(), asio::steady_timer::time_point::max()};
    hold->loss_timers.push_back(&timer);
    co_await timer.async_wait(asio::as_tuple(asio::deferred));
    std::erase(hold->loss_timers, &timer);
  }
  co_return std::tuple{hold->status == hold_status::lost ? error_code{error::lease_lost}
                                                        : error_code{asio::error::operation_aborted}};
}

asio::awaitable<std::tuple<error_code, bool>> client_core::force_release(std::string name) {
  if (auto ec = validate_name(name)) co_return std::tuple{ec, false};
  std::string const channel = channel_of(name);
  script_args args{{name}, {channel}};
  auto [ec, reply] = co_await run_script(conn, scripts::lock_force_release, args);
  if (ec) co_return std::tuple{ec, false};
  if (reply.kind() == resp::type::array && reply.elements().size() == 2 &&
      reply.elements()[1].is_error()) {
    emit(event_kind::waiters_not_notified, event_level::warning, name, {}, error::no_permission,
         reply.elements()[1].text());
    wake_first_waiter(channel);
    co_return std::tuple{error_code{}, true};
  }
  if (reply.kind() != resp::type::integer) co_return std::tuple{error_code{error::unexpected_reply}, false};
  co_return std::tuple{error_code{}, reply.integer() == 1};
}

namespace {

// Whether `type_reply` (of TYPE) names a lock: a hash, or nothing at all.
error_code lock_type_check(resp::value const& type_reply, bool& exists) {
  exists = type_reply.text() != "none";
  if (!exists || type_reply.text() == "hash") return {};
  return type_reply.is_error() ? error_from_server_text(type_reply.text()) : error::wrong_type;
}

}  // namespace

asio::awaitable<std::tuple<error_code, bool>> client_core::is_locked(std::string name) {
  if (auto ec = validate_name(name)) co_return std::tuple{ec, false};
  resp::request req;
  req.push("TYPE", name);
  auto [ec, reply] = co_await exec_one(conn, std::move(req));
  bool exists = false;
  if (!ec) ec = lock_type_check(reply, exists);
  co_return std::tuple{ec, !ec && exists};
}

asio::awaitable<std::tuple<error_code, std::int64_t>> client_core::hold_count(std::string name,
                                                                              std::string owner) {
  if (auto ec = validate_name(name)) co_return std::tuple{ec, std::int64_t{0}};
  if (auto ec = validate_owner(owner)) co_return std::tuple{ec, std::int64_t{0}};
  resp::request req;
  req.push("HGET", name, owner);
  auto [ec, reply] = co_await exec_one(conn, std::move(req));
  std::int64_t count = 0;
  if (!ec && !reply.is_null() && !reply.as_integer(count)) ec = error::unexpected_reply;
  co_return std::tuple{ec, count};
}

asio::awaitable<std::tuple<error_code, std::optional<std::chrono::milliseconds>>>
client_core::remaining_lease(std::string name) {
  using result = std::tuple<error_code, std::optional<std::chrono::milliseconds>>;
  if (auto ec = validate_name(name)) co_return result{ec, std::nullopt};
  resp::request req;
  req.push("TYPE", name);
  req.push("PTTL", name);
  auto [ec, replies] = co_await conn.exec(std::move(req), asio::as_tuple(asio::deferred));
  if (!ec && replies.size() != 2) ec = error::unexpected_reply;
  if (ec) co_return result{ec, std::nullopt};
  bool exists = false;
  if (auto tec = lock_type_check(replies[0], exists)) co_return result{tec, std::nullopt};
  auto const& pttl = replies[1];
  if (pttl.is_error()) co_return result{error_from_server_text(pttl.text()), std::nullopt};
  if (pttl.kind() != resp::type::integer) co_return result{error::unexpected_reply, std::nullopt};
  if (!exists || pttl.integer() == -2) co_return result{error_code{}, std::nullopt};
  if (pttl.integer() == -1) co_return result{error_code{}, std::chrono::milliseconds::max()};
  co_return result{error_code{}, std::chrono::milliseconds{pttl.integer()}};
}

}  // namespace redisync::detail
