// The Prometheus exporter under a real Prometheus server (Debian's `prometheus`): a stress run
// serves its client's metrics with --metrics-port, Prometheus scrapes it every second on loopback,
// and its HTTP API answers for the series: the target is up, acquires are counted and their waits
// form a histogram.

#include "testbed/redis_server.hpp"
#include "support/http_get.hpp"
#include "support/processes.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <fmt/core.h>

#include <filesystem>
#include <fstream>

namespace json = boost::json;
using namespace std::chrono_literals;
using redisync::process::free_loopback_port;
using redisync::process::redis_server;
using redisync::test::child;
using redisync::test::temp_dir;

namespace {

char const* const prometheus_path = "/usr/bin/prometheus";

// The value of the first series that Prometheus answers for `query` now, if any.
std::optional<double> query_value(std::uint16_t prometheus_port, std::string const& query) {
  auto const body = redisync::test::http_get(prometheus_port, "/api/v1/query?query=" + redisync::test::url_escaped(query));
  if (body.empty()) return std::nullopt;
  auto const answer = json::parse(body).as_object();
  if (answer.at("status") != "success") return std::nullopt;
  auto const& result = answer.at("data").at("result").as_array();
  if (result.empty()) return std::nullopt;
  return std::stod(std::string{result[0].at("value").as_array()[1].as_string()});
}

}  // namespace

BOOST_AUTO_TEST_SUITE(prometheus_exporter)

BOOST_AUTO_TEST_CASE(a_real_prometheus_scrapes_a_stress_runs_metrics) {
  BOOST_TEST_REQUIRE(std::filesystem::exists(prometheus_path), "Debian's prometheus package is needed");
  redis_server redis;
  temp_dir dir;
  auto const metrics_port = free_loopback_port();
  auto const prometheus_port = free_loopback_port();
  {
    std::ofstream config{dir.path / "prometheus.yml"};
    config << fmt::format(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n"
        "scrape_configs:\n  - job_name: redisync_stress\n    static_configs:\n"
        "      - targets: ['127.0.0.1:{}']\n",
        metrics_port);
  }
  // Runs until this test stops it: 2 workers taking one lock with waits among them.
  child stress{REDISYNC_TOOL_PATH,
               {"stress", "--redis", redis.url(), "--lock", "scraped", "--workers", "2", "--iterations", "100000000",
                "--hold-ms", "1", "--metrics-port", std::to_string(metrics_port)},
               dir.path / "stress.out", dir.path / "stress.err"};
  child prometheus{prometheus_path,
                   {"--config.file=" + (dir.path / "prometheus.yml").string(),
                    "--storage.tsdb.path=" + (dir.path / "data").string(),
                    "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port)},
                   dir.path / "prometheus.out", dir.path / "prometheus.err"};
  // Prometheus starts, scrapes once a second, and answers the query once a sample is in.
  std::optional<double> up;
  bool const scraped = redisync::test::poll_until(
      [&] {
        up = query_value(prometheus_port, "up{job=\"redisync_stress\"}");
        return up && *up == 1;
      },
      60s);
  BOOST_TEST_REQUIRE(scraped, "Prometheus never scraped the stress run; its log:\n"
                                  << redisync::test::tail_of(dir.path / "prometheus.err", 15)
                                  << "stress:\n" << redisync::test::tail_of(dir.path / "stress.err", 5));
  auto const acquired = query_value(prometheus_port, "redisync_acquires_total{primitive=\"lock\",outcome=\"acquired\"}");
  BOOST_TEST_REQUIRE(acquired.has_value());
  BOOST_TEST(*acquired > 0);
  auto const waits = query_value(prometheus_port, "redisync_acquire_wait_seconds_count{primitive=\"lock\"}");
  BOOST_TEST_REQUIRE(waits.has_value());
  BOOST_TEST(*waits > 0);
  auto const le_inf = query_value(prometheus_port, "redisync_acquire_wait_seconds_bucket{primitive=\"lock\",le=\"+Inf\"}");
  BOOST_TEST_REQUIRE(le_inf.has_value());
  BOOST_TEST(*le_inf == *waits);  // the same scrape: +Inf holds every observation
  auto const connected = query_value(prometheus_port, "redisync_connections_up");
  BOOST_TEST_REQUIRE(connected.has_value());
  BOOST_TEST(*connected == 1);
  stress.kill_hard();
  prometheus.signal(SIGTERM);
  BOOST_TEST(prometheus.wait(20s));
}

BOOST_AUTO_TEST_SUITE_END()
