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
    // A hand-off: {0, token}, the token a decimal string like every token (next_token.lua).
    auto const& t = reply.elements()[1];
    if (t.is_string() && t.as_integer(token) && token >= 0) {
      out.handoff_token = static_cast<std::uint64_t>(token);
      out.remaining = 0;
    }
  } else if (reply.kind() == resp::type::integer) {
    out.remaining = reply.integer();
    if (out.remaining == -2 && count_before_lost_attempt) {
      out.remaining = *count_before_lost_attempt - 1;  // the lost attempt went through
    }
  }
  return out;
}

error_code client_core::finish_release(std::shared_ptr<hold_state> const& hold,
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
  if (hold) {
    if (out.remaining == 0) {
      finish_hold(hold);
    } else {
      hold->count = out.remaining;
      hold->set_valid_until(validity_deadline(sent, hold->lease));
      if (hold->watchdog) schedule_renewal(hold, sent);
      schedule_validity_check(hold);
    }
  }
  return {};
}

asio::awaitable<std::tuple<error_code>> client_core::release(std::string name, std::string owner,
                                                             std::shared_ptr<hold_state> guard,
                                                             bool after_ambiguous) {
  using result = std::tuple<error_code>;
  auto self = shared_from_this();
  if (auto ec = validate_name(name)) co_return result{ec};
  if (auto ec = validate_owner(owner)) co_return result{ec};
  if (guard && !guard->active()) {
    co_return result{guard->status == hold_status::lost ? error::lease_lost : error::not_held};
  }
  std::string const key = hold_key(owner, name);
  std::string const channel = channel_of(name);
  if (unsettled.contains(key)) co_await wait_settled(key);
  auto hold = guard ? guard : find_hold(key);
  if (hold && !hold->active()) co_return result{error::lease_lost};

  bool const last_level = hold && hold->count == 1;
  if (last_level) wheel.cancel(hold->renewal_entry);  // no renewal may follow the release

  // The last level goes straight to the first waiter of this client, if there is one.
  std::shared_ptr<waiter> target;
  if (last_level) {
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

  std::string const lease_text =
      std::to_string((hold ? hold->lease : conn.cfg().watchdog_lease).count());
  std::optional<std::int64_t> count_before_lost_attempt;
  if (after_ambiguous && hold) count_before_lost_attempt = hold->count;
  clock_type::time_point sent;
  resp::value reply;
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
    auto [ec, r] = co_await run_script(conn, scripts::lock_calls, args);
    if (ec == error::ambiguous && hold && !stopped) {
      // Repeating with the count it started from is idempotent (release.lua).
      count_before_lost_attempt = hold->count;
      continue;
    }
    if (ec) {
      if (target) {
        target->handoff_pending = false;
        if (!target->done) {
          queues[channel].push_front(target);
          target->wake();
        }
      }
      if (hold && hold->active() && hold->watchdog) schedule_renewal(hold, clock_type::now());
      co_return result{ec};
    }
    reply = std::move(r);
    break;
  }

  auto const outcome = parse_release_reply(reply, count_before_lost_attempt);
  if (target) {
    target->handoff_pending = false;
    if (outcome.handoff_token) {
      ++handoffs;
      auto& q = queues[channel];
      ++q.consecutive_handoffs;
      if (target->done) {
        // The waiter gave up while the lock was on its way: pass it on or free it.
        release_detached(name, target->owner, nullptr);
      } else {
        target->granted = handoff_grant{*outcome.handoff_token, sent};
      }
    } else if (!target->done) {
      queues[channel].push_front(target);
      target->wake();
    }
  }
  auto const ec = finish_release(hold, channel, outcome, sent);
  if (target && target->granted) target->resume_now();  // last: it may run the new holder's code
  co_return result{ec};
}

void client_core::start_release(std::string name, std::string owner,
                                std::shared_ptr<hold_state> guard,
                                asio::any_completion_handler<void(error_code)> h) {
  pending_handler<void(error_code)> handler{std::move(h), completion_executor};
  auto attempt = [self = shared_from_this(), name = std::move(name), owner = std::move(owner),
                  guard = std::move(guard), handler = std::move(handler)]() mutable {
    self->release_at_once(std::move(name), std::move(owner), std::move(guard), std::move(handler));
  };
  asio::dispatch(strand(), std::move(attempt));
}

void client_core::release_at_once(std::string name, std::string owner,
                                  std::shared_ptr<hold_state> guard,
                                  pending_handler<void(error_code)> handler) {
  auto hold = guard ? guard : find_hold(hold_key(owner, name));
  // The fast path: the last level, with nobody of this client waiting to be handed the lock.
  bool const last_level_alone = hold && hold->active() && hold->count == 1 && !stopped &&
                                !unsettled.contains(hold->key) && !queues.contains(hold->channel);
  if (!last_level_alone) {
    launch(release(std::move(name), std::move(owner), std::move(guard)), std::move(handler),
           nullptr, as_is);
    return;
  }
  wheel.cancel(hold->renewal_entry);  // no renewal may follow the release
  auto request = script_request(scripts::lock_calls, {hold->name},
                                {"release", hold->owner, std::to_string(hold->lease.count()),
                                 hold->channel});
  auto const sent = clock_type::now();
  auto on_reply = [self = shared_from_this(), guard = std::move(guard), hold, sent,
                   handler = std::move(handler)](error_code ec, response replies) mutable {
    if (!ec && replies.size() == 1 && !replies[0].is_error()) {
      auto const outcome = parse_release_reply(replies[0], std::nullopt);
      handler.complete(self->finish_release(hold, hold->channel, outcome, sent));
      return;
    }
    // A lost connection, a server error, NOSCRIPT: the coroutine tries again and reports.
    self->launch(self->release(hold->name, hold->owner, std::move(guard), ec == error::ambiguous),
                 std::move(handler), nullptr, as_is);
  };
  conn.exec(std::move(request), std::move(on_reply));
}

void client_core::release_detached(std::string name, std::string owner,
                                   std::shared_ptr<hold_state> guard) {
  start_release(std::move(name), std::move(owner), std::move(guard),
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
  script_args args{{name}, {channel_of(name)}};
  auto [ec, reply] = co_await run_script(conn, scripts::lock_force_release, args);
  co_return std::tuple{ec, !ec && reply.integer() == 1};
}

asio::awaitable<std::tuple<error_code, bool>> client_core::is_locked(std::string name) {
  if (auto ec = validate_name(name)) co_return std::tuple{ec, false};
  resp::request req;
  req.push("EXISTS", name);
  auto [ec, reply] = co_await exec_one(conn, std::move(req));
  co_return std::tuple{ec, !ec && reply.integer() == 1};
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
  req.push("PTTL", name);
  auto [ec, reply] = co_await exec_one(conn, std::move(req));
  if (ec || reply.integer() == -2) co_return result{ec, std::nullopt};
  if (reply.integer() == -1) co_return result{ec, std::chrono::milliseconds::max()};
  co_return result{ec, std::chrono::milliseconds{reply.integer()}};
}

}  // namespace redisync::detail
