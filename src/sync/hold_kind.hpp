#pragma once

// What the core asks of a kind of hold beyond its renewal: how one level of a hold is released.
// The guards, a shutdown and a guard's destructor release through it, whatever the primitive; the
// primitive's release runs on the shared release loop (release_op).

#include <boost/asio/any_completion_handler.hpp>
#include <boost/system/error_code.hpp>

#include <memory>
#include <string_view>

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
  // Releases `hold` again where its slot is served now (a lock's last level, leased permits), if
  // the server still has it there and nothing otherwise: the hold ended here (released through a
  // master that then stopped being master, or given up for lost), and no hold of its owner and
  // name is kept here. `why` is told with the event if it freed something. A kind without it does
  // nothing.
  virtual void release_again(std::shared_ptr<client_core> /*core*/, std::shared_ptr<hold_state> const& /*hold*/,
                             std::string_view /*why*/) const {}
};

}  // namespace redisync::detail::sync
