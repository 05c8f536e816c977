#pragma once

// How the library makes a guard (its constructor is private).

#include <redisync/held.hpp>

namespace redisync::detail {

struct held_access {
  static held make(std::shared_ptr<sync::client_core> core, std::shared_ptr<sync::hold_state> state,
                   std::shared_ptr<sync::hold_level> level, std::uint64_t token) {
    return held{std::move(core), std::move(state), std::move(level), token};
  }
};

}  // namespace redisync::detail
