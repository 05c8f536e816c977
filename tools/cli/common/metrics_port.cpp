#include "cli/common/metrics_port.hpp"

#include "cli/common/common.hpp"

#ifdef REDISYNC_HAVE_PROMETHEUS
#include <redisync/prometheus.hpp>
#endif

#include <fmt/core.h>

namespace redisync::cli {

struct metrics_port::impl {
#ifdef REDISYNC_HAVE_PROMETHEUS
  std::unique_ptr<prometheus::exporter> exporter;
#endif
};

void add_metrics_options(boost::program_options::options_description& options) {
  namespace po = boost::program_options;
  options.add_options()("metrics-port", po::value<int>(),
                        "serve the client's metrics for Prometheus at http://ADDRESS:PORT/metrics while this runs "
                        "(0: a free port, printed)")(
      "metrics-bind", po::value<std::string>()->default_value("127.0.0.1"), "the ADDRESS of --metrics-port");
}

metrics_options metrics_options_from(boost::program_options::variables_map const& vm) {
  metrics_options o;
  o.bind = vm["metrics-bind"].as<std::string>();
  if (!vm.count("metrics-port")) return o;
  o.port = static_cast<int>(in_range("--metrics-port", vm["metrics-port"].as<int>(), 0, 65535));
#ifndef REDISYNC_HAVE_PROMETHEUS
  throw usage_error{"--metrics-port: this redisync was built without prometheus-cpp (Debian: prometheus-cpp-dev)"};
#endif
  return o;
}

metrics_port::metrics_port([[maybe_unused]] client const& c, metrics_options const& o) : impl_{std::make_unique<impl>()} {
  if (!o.port) return;
#ifdef REDISYNC_HAVE_PROMETHEUS
  impl_->exporter = std::make_unique<prometheus::exporter>(c, fmt::format("{}:{}", o.bind, *o.port));
  fmt::print(stderr, "metrics: http://{}:{}/metrics\n", o.bind, impl_->exporter->port());
#endif
}

metrics_port::~metrics_port() = default;

}  // namespace redisync::cli
