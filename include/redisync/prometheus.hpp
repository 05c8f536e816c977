#pragma once

// The client's metrics (metrics.hpp) for Prometheus: an optional part of the package, the
// redisync::prometheus target, built when prometheus-cpp is found (Debian: prometheus-cpp-dev).
// The core library does not depend on it.
//
//   redisync::prometheus::exporter metrics{client, "127.0.0.1:9464"};  // serves /metrics
//
// Or, beside metrics of the application's own, register a collector with its prometheus-cpp
// Exposer. Each scrape reads client::metrics() once. Names follow Prometheus's conventions:
// redisync_ first, seconds as the unit, counters ending in _total; acquires are labelled by
// `primitive` and `outcome`, losses by `cause`; groups of lock names (config::metrics_group_separator)
// have families of their own, redisync_group_*, labelled by `group`.

#include <redisync/client.hpp>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace prometheus {
class Exposer;
}

namespace redisync::prometheus {

// Reads a client's metrics at every scrape. The client must outlive its registration.
class collector final : public ::prometheus::Collectable {
 public:
  // `labels` go on every series (say, {{"service", "billing"}}).
  explicit collector(client const& c, std::map<std::string, std::string> labels = {});
  std::vector<::prometheus::MetricFamily> Collect() const override;

 private:
  client const& client_;
  std::map<std::string, std::string> labels_;
};

// An HTTP endpoint that serves the client's metrics at /metrics, on `bind_address`
// ("127.0.0.1:9464"; port 0 takes a free one, see port()). Stops serving when destroyed, which
// must happen before the client's end.
class exporter {
 public:
  exporter(client const& c, std::string const& bind_address, std::map<std::string, std::string> labels = {});
  ~exporter();
  exporter(exporter const&) = delete;
  exporter& operator=(exporter const&) = delete;

  int port() const;

 private:
  std::shared_ptr<collector> collector_;
  std::unique_ptr<::prometheus::Exposer> exposer_;
};

}  // namespace redisync::prometheus
