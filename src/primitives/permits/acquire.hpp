#pragma once

// Acquiring leased permits: the lock's acquire loop and hold (a permit is a hold whose owner is its
// id, so the watchdog, loss, fencing and guards are the lock's) with permits_calls.lua's `acquire`;
// waiters sleep until a release or an ended lease frees permits, or until the first lease ends.

#include "primitives/lock/acquire.hpp"
#include "primitives/permits/protocol.hpp"

namespace redisync::detail::permits_protocol {

// The most permits one acquire takes (a bound far above any real use, which keeps counts exact in
// the scripts' Lua numbers).
inline constexpr std::int64_t most_permits = std::int64_t{1} << 40;

class permits_acquire final : public lock_protocol::lock_acquire {
 public:
  // `a.owner` is the id of the new permit (new_permit_id).
  permits_acquire(std::int64_t count, std::shared_ptr<sync::client_core> core, lock_protocol::acquire_args a,
                  handler_type handler);

  std::int64_t count() const noexcept { return count_; }
  // A release of this client passed its permits on to this waiter with `token`, in a call sent at
  // `sent`; false if too late to count (acquire_op::confirm_grant then asks the server).
  bool take_permits(std::uint64_t token, sync::clock_type::time_point sent);

 private:
  io::error_code check_arguments() const override;
  sync::renewal_kind const& hold_renewal() const override { return renewal(); }
  sync::hold_kind const& kind_of_hold() const override { return permit_hold_kind(); }
  script const& attempt_script() const override;
  // Messages carry the number of permits freed.
  sync::message_policy policy() const override { return sync::wake_as_many_as_permits; }
  io::outgoing attempt(bool retry, bool by_digest) override;
  outcome read(io::error_code ec, io::response& replies) override;
  bool may_grant(resp::value const& reply) const override;
  void undo(std::function<void()> then) override;

  std::int64_t count_;
};

void start_acquire(std::int64_t count, std::shared_ptr<sync::client_core> core, lock_protocol::acquire_args a,
                   boost::asio::any_completion_handler<lock_protocol::acquire_signature> h);
void start_acquire(std::int64_t count, std::shared_ptr<sync::client_core> core, lock_protocol::acquire_args a,
                   boost::asio::any_completion_handler<lock_protocol::try_acquire_signature> h);

// The call that gives a permit back (permits_calls.lua's `release`), safe to repeat.
script_args release_args(std::string_view name, std::string_view id);

}  // namespace redisync::detail::permits_protocol
