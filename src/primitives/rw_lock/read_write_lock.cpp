#include <redisync/read_write_lock.hpp>

#include "primitives/rw_lock/protocol.hpp"
#include "sync/client_core.hpp"

namespace redisync {

bool read_write_lock::reads() const { return read_.core_ && read_.core_->holds(read_.owner_, read_.name_); }

bool read_write_lock::writes() const {
  return write_.core_ &&
         write_.core_->holds(detail::rw_protocol::field_of(lock_kind::write, write_.owner_), write_.name_);
}

}  // namespace redisync
