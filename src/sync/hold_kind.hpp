#pragma once

// What the core asks of a kind of hold beyond its renewal: how one level of a hold is released.
// The guards, a shutdown and a guard's destructor release through it, whatever the primitive; the
// primitive's release runs on the shared release loop (release_op).

#include <boost/asio/any_completion_handler.hpp>
#include <boost/system/error_code.hpp>

#include <memory>

namespace redisync::detail::sync {

class client_core;
struct hold_state;
struct hold_level;

class hold_kind {
 public:
  virtual ~hold_kind() = default;
  // Releases `level` of `hold` (a level its guard let go of); `h` gets the outcome.
  virtual void release(std::shared_ptr<client_core> core, std::shared_ptr<hold_state> hold,
                       std::shared_ptr<hold_level> level,
                       boost::asio::any_completion_handler<void(boost::system::error_code)> h) const = 0;
};

}  // namespace redisync::detail::sync
