#include <redisync/multi_lock.hpp>

#include "primitives/lock_protocol/kinds.hpp"
#include "primitives/multi_lock/take.hpp"
#include "sync/client_core.hpp"
#include "sync/launch.hpp"
#include "sync/replicas.hpp"
#include "sync/validate.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <numeric>
#include <set>

namespace redisync {

namespace asio = boost::asio;
namespace proto = detail::multi_protocol;
using boost::system::error_code;
using detail::sync::clock_type;

asio::any_io_executor multi_lock::get_executor() const {
  return core_ ? core_->application_executor() : asio::any_io_executor{asio::system_executor{}};
}

namespace {

using duration = std::optional<std::chrono::milliseconds>;

// The caller's cancellation, kept on the strand: a script call is never interrupted (its outcome
// would be unknown), a wait for a busy member is.
struct cancellation {
  asio::cancellation_signal member_wait;
  asio::cancellation_type type = asio::cancellation_type::none;
  bool cancelled() const { return type != asio::cancellation_type::none; }
};

// `foreign`: a member is a handle of another client.
error_code check(std::string const& owner, std::vector<lock> const& members, bool foreign, duration lease,
                 duration wait) {
  if (members.empty()) return error::invalid_argument;
  if (auto ec = detail::sync::validate_owner(owner)) return ec;
  if (lease) {
    if (auto ec = detail::sync::validate_lease(*lease)) return ec;
  }
  if (wait) {
    if (auto ec = detail::sync::validate_wait(*wait)) return ec;
  }
  std::set<std::string_view> names;
  for (auto const& m : members) {
    if (auto ec = detail::sync::validate_name(m.name())) return ec;
    // A read is shared: a multi-lock takes exclusive locks only (kinds it has an operation for).
    // Each name once, of this owner and this client.
    bool const exclusive = !detail::lock_protocol::facts_of(m.kind()).multi_operation.empty();
    if (!exclusive || m.owner_id() != owner || !names.insert(m.name()).second) {
      return error::invalid_argument;
    }
  }
  return foreign ? error::invalid_argument : error_code{};
}

// Every member, in the one order every multi-lock follows: by name.
std::vector<proto::member> in_global_order(detail::sync::client_core& core, std::vector<lock> const& members,
                                           std::vector<std::size_t>& positions) {
  positions.resize(members.size());
  std::iota(positions.begin(), positions.end(), std::size_t{0});
  std::sort(positions.begin(), positions.end(),
            [&](std::size_t a, std::size_t b) { return members[a].name() < members[b].name(); });
  std::vector<proto::member> ordered;
  for (auto const p : positions) {
    auto const& m = members[p];
    ordered.push_back({m.name(), detail::lock_protocol::facts_of(m.kind()).field_of(m.owner_id()), m.kind(),
                       core.router().slot_of(m.name())});
  }
  return ordered;
}

// Releases the members taken from `from` on. A release the server refused goes on in the
// background until it goes through or the lease ends (held::release): nothing is left held.
asio::awaitable<void> release_all(std::vector<std::optional<held>>& got, std::size_t from = 0) {
  for (auto i = got.size(); i-- > from;) {
    if (!got[i]) continue;
    // Not cancellable: a release is bounded by the lease.
    co_await got[i]->release(
        asio::as_tuple(asio::bind_cancellation_slot(asio::cancellation_slot{}, asio::use_awaitable)));
    got[i].reset();
  }
}

// Waits for the busy member `m` with its own acquire, within the deadline; an empty optional
// when the wait ran out.
asio::awaitable<std::tuple<error_code, std::optional<held>>> wait_for(lock m, duration lease,
                                                                      std::optional<clock_type::time_point> deadline,
                                                                      cancellation& cancel) {
  // No co_await inside a conditional expression: GCC 12 miscompiles it.
  auto token = asio::bind_cancellation_slot(cancel.member_wait.slot(), asio::as_tuple(asio::use_awaitable));
  if (!deadline) {
    std::tuple<error_code, held> got;
    if (lease) {
      got = co_await m.acquire(*lease, token);
    } else {
      got = co_await m.acquire(token);
    }
    auto& [ec, h] = got;
    if (ec) co_return std::tuple{ec, std::optional<held>{}};
    co_return std::tuple{ec, std::optional<held>{std::move(h)}};
  }
  auto const left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - clock_type::now());
  if (left.count() <= 0) co_return std::tuple{error_code{}, std::optional<held>{}};
  if (lease) co_return co_await m.try_acquire(left, *lease, token);
  co_return co_await m.try_acquire(left, token);
}

// The whole acquire, on the strand: the members not held yet that share the first one's slot
// are taken in one call; a busy member is waited for, holding only members before it.
asio::awaitable<std::tuple<error_code, std::vector<held>>> acquire_all(
    std::shared_ptr<detail::sync::client_core> core, std::string owner, std::vector<lock> members, bool foreign,
    duration lease, duration wait, std::shared_ptr<cancellation> cancel) {
  if (auto ec = check(owner, members, foreign, lease, wait)) co_return std::tuple{ec, std::vector<held>{}};
  auto const in_progress = core->track();
  std::optional<clock_type::time_point> deadline;
  if (wait) deadline = clock_type::now() + *wait;
  std::vector<std::size_t> positions;
  auto const ordered = in_global_order(*core, members, positions);
  std::vector<std::optional<held>> got(ordered.size());
  auto const give_up = [cancel, deadline] {
    return cancel->cancelled() || (deadline && clock_type::now() >= *deadline);
  };
  auto fail = [&](error_code ec) -> asio::awaitable<std::tuple<error_code, std::vector<held>>> {
    co_await release_all(got);
    co_return std::tuple{ec, std::vector<held>{}};
  };
  for (;;) {
    if (cancel->cancelled()) co_return co_await fail(asio::error::operation_aborted);
    if (auto ec = core->closed()) co_return co_await fail(ec);
    auto const first = std::find(got.begin(), got.end(), std::nullopt) - got.begin();
    if (static_cast<std::size_t>(first) == got.size()) break;
    std::vector<proto::member const*> group;
    std::vector<std::size_t> group_at;
    for (auto i = static_cast<std::size_t>(first); i < ordered.size(); ++i) {
      if (got[i] || ordered[i].slot != ordered[first].slot) continue;
      group.push_back(&ordered[i]);
      group_at.push_back(i);
    }
    auto taken = co_await proto::take(core, group, lease, give_up);
    if (taken.ec && cancel->cancelled()) co_return co_await fail(asio::error::operation_aborted);
    // A call given up at the deadline (its outcome unknown, or its grant too late) was undone.
    if (taken.ec && give_up() && (taken.ec == error::ambiguous || taken.ec == error::timeout)) {
      co_return co_await fail({});
    }
    if (taken.ec) co_return co_await fail(taken.ec);
    if (!taken.busy) {
      for (std::size_t k = 0; k < group_at.size(); ++k) got[group_at[k]] = std::move(taken.guards[k]);
      if (auto ec = co_await detail::sync::confirm_replicas(*core, ordered[first].slot, ordered[first].name)) co_return co_await fail(ec);
      continue;
    }
    auto const busy = group_at[*taken.busy];
    if (wait && wait->count() == 0) co_return co_await fail({});
    // Only members before the busy one are held while it is waited for: no cycle of waits.
    co_await release_all(got, busy + 1);
    if (cancel->cancelled()) co_return co_await fail(asio::error::operation_aborted);
    auto [ec, h] = co_await wait_for(members[positions[busy]], lease, deadline, *cancel);
    if (ec || !h) co_return co_await fail(ec);
    got[busy] = std::move(h);
  }
  std::vector<held> in_caller_order(members.size());
  for (std::size_t i = 0; i < ordered.size(); ++i) in_caller_order[positions[i]] = std::move(*got[i]);
  co_return std::tuple{error_code{}, std::move(in_caller_order)};
}

template <class Signature>
void start(std::shared_ptr<detail::sync::client_core> const& core, std::string owner, std::vector<lock> members,
           bool foreign, duration lease, duration wait, asio::any_completion_handler<Signature> h,
           std::function<void(detail::pending_handler<Signature>&, error_code, std::vector<held>)> complete) {
  if (!core) return detail::sync::fail_at_once(std::move(h), error::empty_handle);
  detail::pending_handler<Signature> handler{std::move(h), core->homes()};
  auto cancel = std::make_shared<cancellation>();
  detail::sync::forward_cancellation(handler, core->strand(), [cancel](asio::cancellation_type type) {
    cancel->type = type;
    cancel->member_wait.emit(type);
  });
  auto done = [handler = std::move(handler), complete, core, started = core->now(),
               name = members.empty() ? std::string{} : members.front().name()](
                  std::exception_ptr e, std::tuple<error_code, std::vector<held>> r) mutable {
    auto [ec, guards] = std::move(r);
    if (e) ec = make_error_code(boost::system::errc::state_not_recoverable);
    core->metrics().acquire_ended(primitive::multi_lock, name, detail::metrics::outcome_of(ec, !guards.empty()),
                                  core->now() - started);
    complete(handler, ec, std::move(guards));
  };
  core->to_strand([core, owner = std::move(owner), members = std::move(members), foreign, lease, wait, cancel,
                   done = std::move(done)]() mutable {
    asio::co_spawn(core->strand(),
                   acquire_all(core, std::move(owner), std::move(members), foreign, lease, wait, cancel),
                   std::move(done));
  });
}

}  // namespace

bool multi_lock::foreign(core_ptr const& core, std::vector<lock> const& members) {
  return std::any_of(members.begin(), members.end(), [&](lock const& m) { return m.core_ != core; });
}

std::vector<lock> multi_lock::as_members(std::vector<lock> members) {
  for (auto& m : members) m.counted_ = false;
  return members;
}

void multi_lock::start_acquire(core_ptr const& core, std::string owner, std::vector<lock> members, duration lease,
                               duration wait, asio::any_completion_handler<acquire_signature> h) {
  bool const other_client = foreign(core, members);
  start<acquire_signature>(core, std::move(owner), as_members(std::move(members)), other_client, lease, wait,
                           std::move(h), [](auto& handler, error_code ec, std::vector<held> guards) {
                             // acquire() holds or fails: a wait that ran out is a timeout.
                             if (!ec && guards.empty()) ec = error::timeout;
                             handler.complete(ec, ec ? multi_held{} : multi_held{std::move(guards)});
                           });
}

void multi_lock::start_acquire(core_ptr const& core, std::string owner, std::vector<lock> members, duration lease,
                               duration wait, asio::any_completion_handler<try_acquire_signature> h) {
  bool const other_client = foreign(core, members);
  start<try_acquire_signature>(core, std::move(owner), as_members(std::move(members)), other_client, lease, wait,
                               std::move(h), [](auto& handler, error_code ec, std::vector<held> guards) {
                                 if (ec || guards.empty()) return handler.complete(ec, std::nullopt);
                                 handler.complete(ec, std::optional<multi_held>{multi_held{std::move(guards)}});
                               });
}

}  // namespace redisync
