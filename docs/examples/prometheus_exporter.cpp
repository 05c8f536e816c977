// The guide's Prometheus example (docs/guide.md, Metrics), compiled where the optional exporter is
// built (prometheus-cpp).
#include <redisync/prometheus.hpp>

void serve_metrics(redisync::client const& redis) {
  redisync::prometheus::exporter metrics{redis, "127.0.0.1:9464"};  // GET /metrics while it lives
}
