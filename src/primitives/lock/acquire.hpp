#pragma once

// Acquiring the reentrant lock: the acquire on the lock hash (lock_protocol::lock_acquire) with
// lock_calls.lua's attempt: acquire, or retry-acquire with the count on the client's books (a
// nested acquire, or a retry after a lost outcome).

#include "primitives/lock_protocol/acquire.hpp"

namespace redisync::detail::reentrant_lock {

class reentrant_acquire final : public lock_protocol::lock_acquire {
 public:
  reentrant_acquire(std::shared_ptr<sync::client_core> core, lock_protocol::acquire_args a, handler_type handler)
      : lock_acquire{std::move(core), std::move(a), std::move(handler)} {}

 private:
  script const& attempt_script() const override;
  io::outgoing attempt(bool retry, bool by_digest) override;
};

}  // namespace redisync::detail::reentrant_lock
