#pragma once

// A handle on a read-write lock: any number of owners read at once, or one owner writes. read()
// and write() are lock handles (lock.hpp) with the lock's operations and hold semantics, each
// reentrant per owner. The writer may also read (and keep reading after it releases the write: a
// downgrade); an owner that reads cannot write until it stops reading: the write acquire fails at
// once with error::upgrade_refused. A waiting writer keeps new readers of redisync clients out
// (config::prefer_writers), so overlapping readers cannot starve it. Each fresh write hold gets a
// fencing token; read holds carry token 0. The layout is Redisson's RReadWriteLock, so Redisson
// clients and redisync exclude each other on one name (docs/design.md).

#include <redisync/lock.hpp>

#include <string>

namespace redisync {

class read_write_lock {
 public:
  std::string const& name() const noexcept { return read_.name(); }
  std::string const& owner_id() const noexcept { return read_.owner_id(); }

  // The shared side, and the exclusive side: handles of their own, like any lock handle.
  lock read() const { return read_; }
  lock write() const { return write_; }

  // Whether this owner holds the side, as owner::holds says: at once, without I/O.
  bool reads() const;
  bool writes() const;

 private:
  friend class owner;
  read_write_lock(std::shared_ptr<detail::sync::client_core> core, std::string owner_id, std::string name)
      : read_{core, owner_id, name, lock_kind::read}, write_{std::move(core), std::move(owner_id), std::move(name),
                                                              lock_kind::write} {}

  lock read_;
  lock write_;
};

}  // namespace redisync
