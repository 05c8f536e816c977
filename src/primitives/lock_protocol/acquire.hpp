#pragma once

// Acquiring a lock on Redisson's lock hash, whatever its kind: the core's hold acquire
// (sync/hold_acquire.hpp) with what every kind on the hash shares: the reading of an acquire
// reply (acquire.lua's), the kind's hold and renewal, and an undo that releases the level an
// attempt added. Each kind supplies its attempt (the reentrant lock's in primitives/lock).

#include <redisync/held.hpp>

#include "primitives/lock_protocol/protocol.hpp"
#include "sync/hold_acquire.hpp"
#include "sync/launch_acquire.hpp"

#include <boost/asio/awaitable.hpp>

#include <variant>

namespace redisync::detail::lock_protocol {

using acquire_signature = sync::acquire_signature;
using try_acquire_signature = sync::try_acquire_signature;
using acquire_args = sync::hold_request;

// Releases one level of `owner`'s hold of `name` if the owner's count shows that an acquire,
// begun when the count was `count_before`, went through. Safe to repeat; without a connection,
// repeated until `lease` has passed (the level is gone by then).
boost::asio::awaitable<void> undo_acquire(std::shared_ptr<sync::client_core> core, lock_kind kind,
                                          std::string name, std::string owner, std::int64_t count_before,
                                          std::chrono::milliseconds lease);

// The reentrant lock's acquire (primitives/lock), the fair lock's with a queue on the server
// (primitives/fair_lock), the read-write lock's with its two sides (primitives/rw_lock), an
// election's campaign with a log (primitives/election).
class lock_acquire : public sync::hold_acquire {
 public:
  // What the hold of a grant is.
  virtual lock_kind kind() const { return lock_kind::reentrant; }
  // Whether a release of this client may hand it the lock without an attempt of its own (an
  // election's candidate may not: its attempt is what records its term).
  virtual bool takes_handoffs() const { return true; }
  std::optional<primitive> counted_as() const override;

 protected:
  // On the lock's channel.
  lock_acquire(std::shared_ptr<sync::client_core> core, acquire_args a, handler_type handler);
  using hold_acquire::hold_acquire;

  sync::message_policy policy() const override;
  outcome read(io::error_code ec, io::response& replies) override;
  void undo(std::function<void()> then) override;
  bool may_grant(resp::value const& reply) const override;
  sync::renewal_kind const& hold_renewal() const override { return renewal(); }
  sync::hold_kind const& kind_of_hold() const override;
};

}  // namespace redisync::detail::lock_protocol
