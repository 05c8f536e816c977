#pragma once

// --metrics-port for the commands that run a client for a while (stress, bench, demo): its
// metrics served for Prometheus at http://ADDRESS:PORT/metrics while the command runs.

#include <redisync/client.hpp>

#include <boost/program_options.hpp>

#include <memory>
#include <optional>
#include <string>

namespace redisync::cli {

struct metrics_options {
  std::optional<int> port;  // 0: a free port, printed
  std::string bind = "127.0.0.1";
};

void add_metrics_options(boost::program_options::options_description& options);
// Throws usage_error for a port out of range, or --metrics-port in a tool built without the exporter.
metrics_options metrics_options_from(boost::program_options::variables_map const& vm);

// Serves `c`'s metrics while it lives (nothing without a port); says where on stderr.
class metrics_port {
 public:
  metrics_port(client const& c, metrics_options const& o);
  ~metrics_port();
  metrics_port(metrics_port const&) = delete;
  metrics_port& operator=(metrics_port const&) = delete;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace redisync::cli
