#include "primitives/election/observe.hpp"

#include "primitives/election/campaign.hpp"
#include "sync/launch_acquire.hpp"
#include "sync/validate.hpp"

#include <scripts.hpp>

namespace redisync::detail::election_protocol {

namespace asio = boost::asio;
using io::error_code;

namespace {

void on_change_message(sync::waiter_queue& queue, std::string_view) { queue.wake_all(); }

// An observer without a message looks again this often.
constexpr std::chrono::milliseconds observe_recheck{1000};

}  // namespace

void start_next(std::shared_ptr<sync::client_core> core, next_args a, asio::any_completion_handler<next_signature> h) {
  sync::launch_acquire<observe_wait>(std::move(core), std::move(a), std::move(h));
}

observe_wait::observe_wait(std::shared_ptr<sync::client_core> core, next_args a,
                           pending_handler<next_signature> handler)
    : look_op{core,
                 {.name = log_key_of(a.election),
                  .owner = core->id(),
                  .channel = channel_of(a.election),
                  .slot = core->router().slot_of(log_key_of(a.election)),
                  .deadline = sync::clock_type::now() + a.bound,
                  .once = a.bound.count() == 0,
                  .recheck = std::min(observe_recheck, core->cfg().wait_poll_cap)}},
      a_{std::move(a)},
      handler_{std::move(handler)} {}

error_code observe_wait::check_arguments() const {
  if (auto ec = sync::validate_name(a_.election)) return ec;
  return sync::validate_wait(a_.bound);
}

script const& observe_wait::attempt_script() const { return scripts::election_calls; }

sync::message_policy observe_wait::policy() const { return on_change_message; }

io::outgoing observe_wait::attempt(bool, bool by_digest) {
  // A look changes nothing, so one whose outcome was lost is simply made again.
  return script_call(scripts::election_calls, args().slot, script_args{{args().name}, {"next", *a_.seen}}, by_digest);
}

observe_wait::outcome observe_wait::read(error_code ec, io::response& replies) {
  if (ec == error::ambiguous) return {outcome_kind::unknown};
  if (ec) return {outcome_kind::failed, ec};
  if (replies.size() != 1) return {outcome_kind::unreadable};
  auto const& reply = replies[0];
  if (reply.is_error()) return {outcome_kind::failed, server_error_code(reply.text())};
  std::int64_t none = 0;
  if (reply.as_integer(none) && none == 0) return {outcome_kind::busy, {}, std::chrono::milliseconds{-1}};
  auto const e = reply.elements();
  std::int64_t term = 0;
  if (reply.kind() != resp::type::array || e.size() != 4 || !e[0].is_string() || !e[2].as_integer(term) ||
      term < 0 || (e[1].text() != "elected" && e[1].text() != "resigned")) {
    return {outcome_kind::unreadable};
  }
  id_ = std::string{e[0].text()};
  change_ = {e[1].text() == "elected" ? leader_change::kind::elected : leader_change::kind::resigned,
             static_cast<std::uint64_t>(term), std::string{e[3].text()}};
  return {outcome_kind::granted};
}

void observe_wait::complete(error_code ec, bool found) {
  answered();
  if (!found) return handler_.complete(ec ? ec : error_code{error::timeout}, leader_change{});
  *a_.seen = id_;
  // The others of this client may be behind this change too: they look.
  if (core().has_waiters(args().channel)) core().queue(args().channel).wake_all();
  handler_.complete({}, std::move(change_));
}

}  // namespace redisync::detail::election_protocol
