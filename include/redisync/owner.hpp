#pragma once

// An owner is the identity that holds locks: `<client-uuid>:<64-bit id>`, never a thread id
// (coroutines hop threads, and one thread runs many tasks). A task makes one owner and passes it,
// or lock handles made from it, to nested calls, which then re-enter.

#include <redisync/fair_lock.hpp>
#include <redisync/lock.hpp>
#include <redisync/multi_lock.hpp>
#include <redisync/permits.hpp>
#include <redisync/read_write_lock.hpp>
#include <redisync/semaphore.hpp>

#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace redisync {

class client;

class owner {
 public:
  std::string const& id() const noexcept { return id_; }

  // A handle on the reentrant lock `name` held by this owner.
  redisync::lock lock(std::string name) const {
    return redisync::lock{core_, id_, std::move(name), lock_kind::reentrant};
  }
  // A handle on the fair lock `name`: waiters are served in the order they first asked.
  redisync::fair_lock fair_lock(std::string name) const { return redisync::fair_lock{core_, id_, std::move(name)}; }

  // A handle on the read-write lock `name`: its read() side is shared, its write() side exclusive.
  redisync::read_write_lock read_write_lock(std::string name) const {
    return redisync::read_write_lock{core_, id_, std::move(name)};
  }

  // A multi-lock of `members` (multi_lock.hpp): handles on locks of this owner, reentrant, fair or
  // the write side of read-write locks, each name once.
  redisync::multi_lock locks(std::span<redisync::lock const> members) const {
    return redisync::multi_lock{core_, id_, {members.begin(), members.end()}};
  }
  redisync::multi_lock locks(std::initializer_list<redisync::lock> members) const {
    return locks(std::span<redisync::lock const>{members.begin(), members.end()});
  }
  // A multi-lock of the reentrant locks `names`.
  redisync::multi_lock locks(std::vector<std::string> const& names) const {
    std::vector<redisync::lock> members;
    for (auto const& n : names) members.push_back(lock(n));
    return redisync::multi_lock{core_, id_, std::move(members)};
  }

  // A handle on the semaphore of leased permits `name` (permits.hpp), acquired for this owner.
  redisync::permits permits(std::string name) const { return redisync::permits{core_, id_, std::move(name), false}; }
  // The same permits, with waiters served in the order they first asked, across processes (the
  // fair lock's queue); use one semaphore either fair or not: plain waiters do not queue.
  redisync::permits fair_permits(std::string name) const {
    return redisync::permits{core_, id_, std::move(name), true};
  }
  // A handle on the Redisson semaphore `name` (semaphore.hpp), whose permits this owner takes.
  redisync::semaphore semaphore(std::string name) const { return redisync::semaphore{core_, id_, std::move(name)}; }
  // Whether this owner holds `name` (a lock, or either side of a read-write lock) as far as its
  // client knows, at once and without I/O (Redisson's isHeldByCurrentThread): a level was granted,
  // not released, and the hold is not lost. A lock deleted on the server is seen at the next
  // renewal, at once if this client deleted it (force_release) or heard the unlock message while
  // it has waiters on the lock. read_write_lock::reads and ::writes tell the sides apart.
  bool holds(std::string_view name) const;

  friend bool operator==(owner const& a, owner const& b) noexcept { return a.id_ == b.id_; }

 private:
  friend class client;
  owner(std::shared_ptr<detail::sync::client_core> core, std::string id) : core_{std::move(core)}, id_{std::move(id)} {}

  std::shared_ptr<detail::sync::client_core> core_;
  std::string id_;
};

}  // namespace redisync
