#pragma once

// Acquiring leased permits: the core's hold acquire (a permit is a hold whose owner is its id, so
// the watchdog, loss, fencing and guards are every hold's) with permits_calls.lua's `acquire`;
// waiters sleep until a release or an ended lease frees permits, or until the first lease ends.

#include "primitives/permits/protocol.hpp"
#include "sync/hold_acquire.hpp"
#include "sync/launch_acquire.hpp"

namespace redisync::detail::permits_protocol {

// The most permits one acquire takes (a bound far above any real use, which keeps counts exact in
// the scripts' Lua numbers).
inline constexpr std::int64_t most_permits = std::int64_t{1} << 40;

class permits_acquire final : public sync::hold_acquire {
 public:
  // `a.owner` is the id of the new permit (new_permit_id); `fair`: waiters queue on the server.
  permits_acquire(std::int64_t count, bool fair, std::shared_ptr<sync::client_core> core,
                  sync::hold_request a, handler_type handler);

  std::int64_t count() const noexcept { return count_; }
  std::optional<primitive> counted_as() const override { return fair_ ? primitive::fair_permits : primitive::permits; }
  // A release of this client passed its permits on to this waiter with `token`, in a call sent at
  // `sent`; false if too late to count (acquire_op::confirm_grant then asks the server).
  bool take_permits(std::uint64_t token, sync::clock_type::time_point sent);

 private:
  io::error_code check_arguments() const override;
  sync::renewal_kind const& hold_renewal() const override { return renewal(); }
  sync::hold_kind const& kind_of_hold() const override { return permit_hold_kind(fair_); }
  bool queues_on_server() const override { return fair_; }
  script const& attempt_script() const override;
  // Messages carry the number of permits freed; for fair permits, the head called by name.
  sync::message_policy policy() const override { return fair_ ? on_fair_message : sync::wake_as_many_as_freed; }
  io::outgoing attempt(bool retry, bool by_digest) override;
  outcome read(io::error_code ec, io::response& replies) override;
  bool may_grant(resp::value const& reply) const override;
  void undo(std::function<void()> then) override;
  void complete(io::error_code ec, bool held) override;

  std::int64_t count_;
  bool fair_;
};

void start_acquire(std::int64_t count, bool fair, std::shared_ptr<sync::client_core> core,
                   sync::hold_request a, boost::asio::any_completion_handler<sync::acquire_signature> h);
void start_acquire(std::int64_t count, bool fair, std::shared_ptr<sync::client_core> core,
                   sync::hold_request a,
                   boost::asio::any_completion_handler<sync::try_acquire_signature> h);

// The call that gives a permit back (permits_calls.lua's `release`), safe to repeat; for fair
// permits, their queue's part (`release-fair`: the head is called by name).
script_args release_args(sync::client_core& core, std::string_view name, std::string_view id, bool fair);

// The last arguments of a fair call on `slot`: the client, the liveness keys' prefix, the
// liveness and the poll cap.
void append_fair_client(script_args& args, sync::client_core& core, routing::slot_type slot);

// Takes the fair waiter `id` out of the queue of `name` (it gave up), calling the next head.
boost::asio::awaitable<void> leave_queue(std::shared_ptr<sync::client_core> core, std::string name, std::string id);

}  // namespace redisync::detail::permits_protocol
