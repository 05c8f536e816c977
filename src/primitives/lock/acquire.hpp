#pragma once

// Acquiring the reentrant lock: the shared acquire loop (sync/acquire_op.hpp) with the lock's
// attempt (lock_calls.lua: acquire, or retry-acquire after a lost outcome), its reading of replies
// and its undo.

#include <redisync/held.hpp>

#include "primitives/lock/protocol.hpp"
#include "sync/hold_acquire.hpp"
#include "sync/launch_acquire.hpp"

#include <boost/asio/awaitable.hpp>

#include <variant>

namespace redisync::detail::lock_protocol {

using acquire_signature = sync::acquire_signature;
using try_acquire_signature = sync::try_acquire_signature;
using acquire_args = sync::hold_request;

// Starts an acquire on the client's strand; `h` completes on its own executor.
void start_acquire(std::shared_ptr<sync::client_core> core, acquire_args a,
                   boost::asio::any_completion_handler<acquire_signature> h);
void start_acquire(std::shared_ptr<sync::client_core> core, acquire_args a,
                   boost::asio::any_completion_handler<try_acquire_signature> h);

// Releases one level of `owner`'s hold of `name` if the owner's count shows that an acquire,
// begun when the count was `count_before`, went through. Safe to repeat; without a connection,
// repeated until `lease` has passed (the level is gone by then).
boost::asio::awaitable<void> undo_acquire(std::shared_ptr<sync::client_core> core, std::string name,
                                          std::string owner, std::int64_t count_before,
                                          std::chrono::milliseconds lease);

// The fair lock's acquire (primitives/fair_lock) is this one with a queue on the server; the
// read-write lock's (primitives/rw_lock), with its two sides; an election's campaign, with a log.
class lock_acquire : public sync::hold_acquire {
 public:
  lock_acquire(std::shared_ptr<sync::client_core> core, acquire_args a, handler_type handler);

  // What the hold of a grant is.
  virtual lock_kind kind() const { return lock_kind::reentrant; }
  // Whether a release of this client may hand it the lock without an attempt of its own (an
  // election's candidate may not: its attempt is what records its term).
  virtual bool takes_handoffs() const { return true; }
  std::optional<primitive> counted_as() const override;

 protected:
  using hold_acquire::hold_acquire;

  script const& attempt_script() const override;
  sync::message_policy policy() const override;
  io::outgoing attempt(bool retry, bool by_digest) override;
  outcome read(io::error_code ec, io::response& replies) override;
  void undo(std::function<void()> then) override;
  bool may_grant(resp::value const& reply) const override;
  sync::renewal_kind const& hold_renewal() const override { return renewal(); }
  sync::hold_kind const& kind_of_hold() const override;
};

}  // namespace redisync::detail::lock_protocol
