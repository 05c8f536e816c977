#include "primitives/lock_protocol/queries.hpp"

#include "primitives/lock_protocol/kinds.hpp"
#include "routing/exec_one.hpp"
#include "sync/validate.hpp"

#include <boost/asio/deferred.hpp>

namespace redisync::detail::lock_protocol {

namespace asio = boost::asio;
using io::error_code;

namespace {

// Whether `type_reply` (of TYPE) names a lock: a hash, or nothing at all.
error_code lock_type_check(resp::value const& type_reply, bool& exists) {
  exists = type_reply.text() != "none";
  if (!exists || type_reply.text() == "hash") return {};
  return type_reply.is_error() ? server_error_code(type_reply.text()) : error_code{error::wrong_type};
}

}  // namespace

asio::awaitable<std::tuple<error_code, bool>> force_release(core_ptr core, std::string name, lock_kind kind) {
  if (auto ec = sync::validate_name(name)) co_return std::tuple{ec, false};
  auto const& facts = facts_of(kind);
  std::string const channel = facts.channel_of(name);
  auto [ec, reply] =
      co_await run_script(core->scripts(), *facts.force_script, core->router().slot_of(name), facts.force_args(name));
  if (ec) co_return std::tuple{ec, false};
  // Whatever this client held of the lock is gone now, not at the next renewal.
  core->lose_holds_of(name);
  if (reply.kind() == resp::type::array && reply.elements().size() == 2 && reply.elements()[1].is_error()) {
    core->emit(event_kind::waiters_not_notified, event_level::warning, name, {}, error::no_permission,
               reply.elements()[1].text());
    core->wake_first_waiter(channel);
    co_return std::tuple{error_code{}, true};
  }
  if (reply.kind() != resp::type::integer) co_return std::tuple{error_code{error::unexpected_reply}, false};
  co_return std::tuple{error_code{}, reply.integer() == 1};
}

asio::awaitable<std::tuple<error_code, bool>> is_locked(core_ptr core, std::string name) {
  if (auto ec = sync::validate_name(name)) co_return std::tuple{ec, false};
  resp::request req;
  req.push("TYPE", name);
  auto [ec, reply] = co_await routing::exec_one(core->router(), core->router().slot_of(name), std::move(req));
  bool exists = false;
  if (!ec) ec = lock_type_check(reply, exists);
  co_return std::tuple{ec, !ec && exists};
}

asio::awaitable<std::tuple<error_code, std::int64_t>> hold_count(core_ptr core, std::string name, std::string owner) {
  if (auto ec = sync::validate_name(name)) co_return std::tuple{ec, std::int64_t{0}};
  if (auto ec = sync::validate_owner(owner)) co_return std::tuple{ec, std::int64_t{0}};
  resp::request req;
  req.push("HGET", name, owner);
  auto [ec, reply] = co_await routing::exec_one(core->router(), core->router().slot_of(name), std::move(req));
  std::int64_t count = 0;
  if (!ec && !reply.is_null() && !reply.as_integer(count)) ec = error::unexpected_reply;
  co_return std::tuple{ec, count};
}

asio::awaitable<std::tuple<error_code, std::optional<std::chrono::milliseconds>>> remaining_lease(core_ptr core,
                                                                                                 std::string name) {
  using result = std::tuple<error_code, std::optional<std::chrono::milliseconds>>;
  if (auto ec = sync::validate_name(name)) co_return result{ec, std::nullopt};
  resp::request req;
  req.push("TYPE", name);
  req.push("PTTL", name);
  auto [ec, replies] = co_await routing::exec(core->router(), core->router().slot_of(name), std::move(req));
  if (!ec && replies.size() != 2) ec = error::unexpected_reply;
  if (ec) co_return result{ec, std::nullopt};
  bool exists = false;
  if (auto tec = lock_type_check(replies[0], exists)) co_return result{tec, std::nullopt};
  auto const& pttl = replies[1];
  if (pttl.is_error()) co_return result{server_error_code(pttl.text()), std::nullopt};
  if (pttl.kind() != resp::type::integer) co_return result{error::unexpected_reply, std::nullopt};
  if (!exists || pttl.integer() == -2) co_return result{error_code{}, std::nullopt};
  if (pttl.integer() == -1) co_return result{error_code{}, std::chrono::milliseconds::max()};
  co_return result{error_code{}, std::chrono::milliseconds{pttl.integer()}};
}

}  // namespace redisync::detail::lock_protocol
