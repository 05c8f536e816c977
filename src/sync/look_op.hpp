#pragma once

// The acquire loop for a wait that holds nothing (a latch's wait, an election observer's): its
// attempts only look, so there is nothing to undo, and a look whose outcome was lost is simply
// made again. It keeps the client from ending its work until the caller has its answer.

#include "sync/acquire_op.hpp"
#include "sync/client_core.hpp"

namespace redisync::detail::sync {

class look_op : public acquire_op {
 protected:
  look_op(std::shared_ptr<client_core> core, params p)
      : acquire_op{core, std::move(p)}, core_{std::move(core)}, in_progress_{core_->track()} {}

  bool prepare() override { return false; }
  void undo_late_grant(io::error_code, io::response const&, std::function<void()> then) override { then(); }
  void undo(std::function<void()> then) override { then(); }

  // The caller is about to have its answer.
  void answered() { in_progress_.reset(); }
  client_core& core() const noexcept { return *core_; }

 private:
  std::shared_ptr<client_core> core_;
  work_ticket in_progress_;
};

}  // namespace redisync::detail::sync
