#pragma once

// The releases a master acknowledged lately. Replication is asynchronous: a master that stops
// being master (a failover) may have acknowledged releases its successor never received, which
// would keep the locks there, held by no one, for the rest of their leases. When the client sees
// another master take over, the releases it recorded within the failover window are made again
// (idempotently) where the locks are served now. So are holds lost because a new master lacked
// them: their grant stays on the old master, which a failover back may make master again.

#include "routing/router.hpp"
#include "sync/hold.hpp"

#include <chrono>
#include <cstddef>
#include <deque>
#include <memory>
#include <string_view>
#include <vector>

namespace redisync::detail::sync {

class release_journal {
 public:
  static constexpr std::size_t max_entries = 16384;

  static constexpr std::string_view released_then_demoted = "released through a master that then stopped being master";
  static constexpr std::string_view lost_to_a_new_master = "lost to a new master that lacked it; its grant may return with the old one";

  explicit release_journal(std::chrono::milliseconds window) : window_{window} {}

  // A hold whose last level the master `node` acknowledged as released at `at`, or (`why`) that
  // was found lost at `at` on `node`, a master that did not have it. `why` is one of the reasons
  // above.
  void record(std::shared_ptr<hold_state> hold, clock_type::time_point at, routing::node_id node,
              std::string_view why = released_then_demoted) {
    if (window_ <= std::chrono::milliseconds{0}) return;
    forget_before(at);
    if (entries_.size() == max_entries) entries_.pop_front();
    entries_.push_back({std::move(hold), at, node, why});
  }

  struct recorded {
    std::shared_ptr<hold_state> hold;
    std::string_view why;
  };
  // The holds recorded within the window before `now` (at most their lease before it) whose slot
  // `moved` says has another master now.
  template <class Moved>
  std::vector<recorded> recent(clock_type::time_point now, Moved moved) {
    forget_before(now);
    std::vector<recorded> out;
    for (auto const& e : entries_) {
      if (now - e.at <= e.hold->lease && moved(e.hold->slot, e.node)) out.push_back({e.hold, e.why});
    }
    return out;
  }

  std::size_t size() const noexcept { return entries_.size(); }

 private:
  struct entry {
    std::shared_ptr<hold_state> hold;
    clock_type::time_point at;
    routing::node_id node;
    std::string_view why;
  };
  void forget_before(clock_type::time_point now) {
    while (!entries_.empty() && now - entries_.front().at > window_) entries_.pop_front();
  }

  std::chrono::milliseconds window_;
  std::deque<entry> entries_;  // oldest first
};

}  // namespace redisync::detail::sync
