#include <redisync/election.hpp>

#include "primitives/election/campaign.hpp"
#include "primitives/election/observe.hpp"
#include "primitives/lock_protocol/protocol.hpp"
#include "script/runner.hpp"
#include "sync/launch.hpp"
#include "sync/launch_acquire.hpp"
#include "sync/replicas.hpp"
#include "sync/validate.hpp"

#include <scripts.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/system_executor.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace redisync {

namespace asio = boost::asio;
namespace proto = detail::election_protocol;
using boost::system::error_code;

asio::any_io_executor election::get_executor() const {
  return core_ ? core_->application_executor() : asio::any_io_executor{asio::system_executor{}};
}

namespace {

using core_type = std::shared_ptr<detail::sync::client_core>;

// The resignation is logged only while the candidate still leads; the release comes whatever the
// log said (leadership is given up either way), and its error is the one that counts.
asio::awaitable<std::tuple<error_code>> resign_and_release(core_type core, std::string name,
                                                           detail::resignation r) {
  auto release = [&]() -> asio::awaitable<std::tuple<error_code>> {
    auto token = asio::as_tuple(asio::use_awaitable);
    co_return co_await asio::async_initiate<decltype(token), void(error_code)>(
        [&](auto h) { r.release(asio::any_completion_handler<void(error_code)>{std::move(h)}); }, token);
  };
  if (auto ec = detail::sync::validate_name(name)) co_return std::tuple{ec};
  if (!r.leads) co_return co_await release();  // the guard says why: not_held or lease_lost
  auto const lock = proto::lock_key_of(name);
  detail::script_args args{{lock, proto::log_key_of(name)},
                           {"resign", r.owner, std::to_string(r.term), proto::channel_of(name)}};
  auto [ec, resigned] = co_await detail::run_script_for_integer(core->scripts(), detail::scripts::election_calls,
                                                                core->router().slot_of(lock), args);
  auto [rec] = co_await release();
  co_return std::tuple{rec ? rec : ec};
}

// Resigns `leadership`, whatever comes of it.
asio::awaitable<void> resign_quietly(core_type core, std::string name, held& leadership) {
  using release_handler = asio::any_completion_handler<void(error_code)>;
  std::function<void(release_handler)> release = [op = leadership.release(asio::deferred)](release_handler h) mutable {
    std::move(op)(std::move(h));
  };
  detail::resignation r{leadership.owner_id(), leadership.token(), leadership.is_held(), std::move(release)};
  co_await resign_and_release(std::move(core), std::move(name), std::move(r));
}

template <class Signature>
void start_campaign_for(core_type const& core, std::string const& name, std::string value,
              std::optional<std::chrono::milliseconds> wait, asio::any_completion_handler<Signature> h) {
  if (!core) return detail::sync::fail_at_once(std::move(h), error::empty_handle);
  // A candidate of its own: a campaign never re-enters another's leadership.
  auto candidate = core->id() + ":" + std::to_string(core->next_owner_number());
  detail::lock_protocol::acquire_args a{proto::lock_key_of(name), std::move(candidate), std::nullopt, wait, false};
  // A leadership too few replicas acknowledged (config::wait_replicas) is resigned: observers, who
  // saw it elected, see it end.
  auto const granted = [](auto& result) { return detail::sync::hold_in(result) != nullptr; };
  auto const give_back = [core, name](auto& result) { return resign_quietly(core, name, *detail::sync::hold_in(result)); };
  // Made, not assigned: Asio 1.26's any_completion_handler move assignment recurses without end.
  asio::any_completion_handler<Signature> confirmed =
      detail::sync::replicated(core, a.name, std::move(h), granted, give_back);
  detail::sync::launch_acquire<proto::campaign_acquire>(core, std::move(a), std::move(confirmed), name,
                                                        std::move(value));
}

asio::awaitable<std::tuple<error_code, std::optional<leader_info>>> read_leader(core_type core, std::string name) {
  if (auto ec = detail::sync::validate_name(name)) co_return std::tuple{ec, std::nullopt};
  auto const lock = proto::lock_key_of(name);
  detail::script_args args{{lock, proto::log_key_of(name)}, {"leader"}};
  auto [ec, reply] = co_await detail::run_script(core->scripts(), detail::scripts::election_calls,
                                                 core->router().slot_of(lock), args);
  if (ec) co_return std::tuple{ec, std::nullopt};
  std::int64_t none = 0;
  if (reply.as_integer(none) && none == 0) co_return std::tuple{error_code{}, std::nullopt};
  auto const e = reply.elements();
  std::int64_t term = 0;
  if (reply.kind() != resp::type::array || e.size() != 2 || !e[0].as_integer(term) || term < 0) {
    co_return std::tuple{error_code{error::unexpected_reply}, std::nullopt};
  }
  co_return std::tuple{error_code{}, leader_info{static_cast<std::uint64_t>(term), std::string{e[1].text()}}};
}

}  // namespace

void election::start_campaign(core_ptr const& core, std::string const& name, std::string value,
                              std::optional<std::chrono::milliseconds> wait,
                              asio::any_completion_handler<campaign_signature> h) {
  start_campaign_for(core, name, std::move(value), wait, std::move(h));
}

void election::start_campaign(core_ptr const& core, std::string const& name, std::string value,
                              std::optional<std::chrono::milliseconds> wait,
                              asio::any_completion_handler<try_campaign_signature> h) {
  start_campaign_for(core, name, std::move(value), wait, std::move(h));
}

void election::start_resign(core_ptr const& core, std::string const& name, resignation r,
                            asio::any_completion_handler<void(error_code)> h) {
  if (!core) return detail::sync::fail_at_once(std::move(h), error::empty_handle);
  detail::sync::launch(core->strand(), core->homes(), resign_and_release(core, name, std::move(r)), std::move(h),
                       false);
}

void election::start_leader(core_ptr const& core, std::string const& name,
                            asio::any_completion_handler<leader_signature> h) {
  if (!core) return detail::sync::fail_at_once(std::move(h), error::empty_handle);
  detail::sync::launch(core->strand(), core->homes(), read_leader(core, name), std::move(h), true);
}

void election_observer::start_next(core_ptr const& core, std::string const& name,
                                   std::shared_ptr<std::string> const& seen, std::chrono::milliseconds bound,
                                   asio::any_completion_handler<next_signature> h) {
  if (!core) return detail::sync::fail_at_once(std::move(h), error::empty_handle);
  proto::start_next(core, {name, seen, bound}, std::move(h));
}

}  // namespace redisync
