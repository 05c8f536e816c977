#pragma once

// Undoing what a call may have done, in the background: an acquire whose outcome was lost, a
// grant nobody waits for any more, a release made again after a change of master.

#include "script/script.hpp"
#include "sync/client_core.hpp"

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace redisync::detail::sync {

// Repeats `args`, a call of `s` that releases at most the level or the permits an acquire added
// (so it is safe to repeat), until its outcome is known or `lease` has passed. A call that freed
// something (its reply: what is left, 0 or more, or {0, ...}) is told as grant_undone, or as
// release_made_again with `again` when that says why it was made again (hold_kind::release_again).
boost::asio::awaitable<void> undo_with(std::shared_ptr<client_core> core, script const& s, script_args args,
                                       std::string name, std::string owner, std::chrono::milliseconds lease,
                                       std::string again = {});

}  // namespace redisync::detail::sync
