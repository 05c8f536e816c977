#pragma once

#include "routing/router.hpp"

#include <memory>

namespace redisync::detail::routing {

// The router for `cfg.mode`: standalone, cluster or sentinel.
std::shared_ptr<router> make_router(io::connection::executor_type ex, config const& cfg, router_events events);

}  // namespace redisync::detail::routing
