#include "routing/make_router.hpp"

#include "routing/cluster.hpp"
#include "routing/sentinel.hpp"
#include "routing/standalone.hpp"

namespace redisync::detail::routing {

std::shared_ptr<router> make_router(io::connection::executor_type ex, config const& cfg, router_events events) {
  switch (cfg.mode) {
    case topology::cluster: return cluster::create(std::move(ex), cfg, std::move(events));
    case topology::sentinel: return std::make_shared<sentinel>(std::move(ex), cfg, std::move(events));
    case topology::standalone: break;
  }
  return std::make_shared<standalone>(std::move(ex), cfg, std::move(events));
}

}  // namespace redisync::detail::routing
