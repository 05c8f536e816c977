#include <redisync/event.hpp>

namespace redisync {

std::string_view to_string(event_kind kind) noexcept {
  switch (kind) {
    case event_kind::renewal_failed: return "renewal failed";
    case event_kind::hold_uncertain: return "hold uncertain";
    case event_kind::hold_lost: return "hold lost";
    case event_kind::release_failed: return "release failed";
    case event_kind::release_retried: return "release retried";
    case event_kind::waiters_not_notified: return "waiters not notified";
    case event_kind::grant_undone: return "grant undone";
    case event_kind::outcome_resolved: return "outcome resolved";
    case event_kind::connecting: return "connecting";
    case event_kind::connected: return "connected";
    case event_kind::connect_failed: return "connect failed";
    case event_kind::disconnected: return "disconnected";
    case event_kind::reconnect_scheduled: return "reconnect scheduled";
    case event_kind::eviction_possible: return "eviction possible";
    case event_kind::not_replicated: return "not replicated";
    case event_kind::release_made_again: return "release made again";
  }
  return "unknown event";
}

std::string_view to_string(event_level level) noexcept {
  switch (level) {
    case event_level::debug: return "debug";
    case event_level::info: return "info";
    case event_level::warning: return "warning";
    case event_level::error: return "error";
  }
  return "unknown";
}

}  // namespace redisync
