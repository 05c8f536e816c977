#pragma once

// A handle on a fair lock: the reentrant lock's operations and meaning (lock.hpp), with waiters
// served in the order in which their first attempts reached Redis, across processes. Waiters are
// judged alive per client, by a key each client keeps alive with beats (config::fair_waiter_liveness)
// and Redis server time, so a process that dies has its waiters passed over within about 1.1 times
// that; one that gives up leaves the queue at once; a release calls the next waiter only. Reentrant acquires by the holder skip the queue, and
// try_acquire(0) never jumps it. The lock hash is Redisson's, so a fair lock excludes a Redisson or
// redisync reentrant lock of the same name; the queue is redisync's own (docs/design.md).

#include <redisync/lock.hpp>

namespace redisync {

class fair_lock : public lock {
 private:
  friend class owner;
  fair_lock(core_ptr core, std::string owner_id, std::string name)
      : lock{std::move(core), std::move(owner_id), std::move(name), lock_kind::fair} {}
};

}  // namespace redisync
