#include "primitives/latch/wait.hpp"

#include "routing/hash_slot.hpp"
#include "sync/launch_acquire.hpp"
#include "sync/validate.hpp"

#include <scripts.hpp>

namespace redisync::detail::latch_protocol {

namespace asio = boost::asio;
using io::error_code;

namespace {

// The latch opened: every waiter looks. Any other message ('1', a count set) changes nothing for
// them.
void on_latch_message(sync::waiter_queue& queue, std::string_view message) {
  if (message == "0") queue.wake_all();
}

// A waiter with no message looks again this often: a latch has no lease to wait for.
constexpr std::chrono::milliseconds latch_recheck{1000};

}  // namespace

std::string channel_of(std::string_view name) {
  return routing::key_beside("redisson_countdownlatch__channel__", name);
}

void start_wait(std::shared_ptr<sync::client_core> core, wait_args a, asio::any_completion_handler<wait_signature> h) {
  sync::launch_acquire<latch_wait>(std::move(core), std::move(a), std::move(h));
}

latch_wait::latch_wait(std::shared_ptr<sync::client_core> core, wait_args a, pending_handler<wait_signature> handler)
    : look_op{core,
                 {.name = a.name,
                  .owner = core->id(),
                  .channel = channel_of(a.name),
                  .slot = core->router().slot_of(a.name),
                  .deadline = sync::clock_type::now() + a.bound,
                  .once = a.bound.count() == 0,
                  .recheck = std::min(latch_recheck, core->cfg().wait_poll_cap)}},
      bound_{a.bound},
      handler_{std::move(handler)} {}

error_code latch_wait::check_arguments() const {
  if (auto ec = sync::validate_name(args().name)) return ec;
  return sync::validate_wait(bound_);
}

script const& latch_wait::attempt_script() const { return scripts::latch_calls; }

sync::message_policy latch_wait::policy() const { return on_latch_message; }

io::outgoing latch_wait::attempt(bool, bool by_digest) {
  // A look changes nothing, so one whose outcome was lost is simply made again.
  return script_call(scripts::latch_calls, args().slot, script_args{{args().name}, {"wait"}}, by_digest);
}

latch_wait::outcome latch_wait::read(error_code ec, io::response& replies) {
  std::int64_t open = 0;
  if (auto const o = read_flag(ec, replies, open)) return *o;
  if (open == 0) return {outcome_kind::busy, {}, std::chrono::milliseconds{-1}};
  return {outcome_kind::granted};
}

void latch_wait::complete(error_code ec, bool open) {
  answered();
  // Found open without a message (lost, or sent before this client listened): so are the others'.
  if (open && core().has_waiters(args().channel)) core().queue(args().channel).wake_all();
  handler_.complete(open ? error_code{} : ec, open);
}

}  // namespace redisync::detail::latch_protocol
