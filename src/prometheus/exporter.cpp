#include <redisync/prometheus.hpp>

#include <prometheus/exposer.h>

#include <deque>
#include <iterator>
#include <stdexcept>

namespace redisync::prometheus {

namespace {

using ::prometheus::ClientMetric;
using ::prometheus::MetricFamily;
using ::prometheus::MetricType;

// The families of one scrape, each series with the collector's labels first.
class families {
 public:
  explicit families(std::map<std::string, std::string> const& labels) {
    for (auto const& [name, value] : labels) base_.push_back({name, value});
  }

  MetricFamily& family(std::string name, std::string help, MetricType type) {
    out_.push_back({std::move(name), std::move(help), type, {}});
    return out_.back();
  }

  ClientMetric& series(MetricFamily& f, std::vector<ClientMetric::Label> labels = {}) {
    ClientMetric m;
    m.label = base_;
    m.label.insert(m.label.end(), labels.begin(), labels.end());
    f.metric.push_back(std::move(m));
    return f.metric.back();
  }

  void counter(std::string name, std::string help, double value) {
    series(family(std::move(name), std::move(help), MetricType::Counter)).counter.value = value;
  }
  void gauge(std::string name, std::string help, double value) {
    series(family(std::move(name), std::move(help), MetricType::Gauge)).gauge.value = value;
  }

  std::vector<MetricFamily> done() && {
    return {std::make_move_iterator(out_.begin()), std::make_move_iterator(out_.end())};
  }

 private:
  std::vector<ClientMetric::Label> base_;
  std::deque<MetricFamily> out_;  // a family made earlier stays where it is while series are added
};

void put_histogram(ClientMetric& m, duration_histogram const& h) {
  m.histogram.sample_count = h.count;
  m.histogram.sample_sum = h.sum_s;
  for (std::size_t i = 0; i < h.upper_bounds_s.size(); ++i) {
    m.histogram.bucket.push_back({h.cumulative_counts[i], h.upper_bounds_s[i]});
  }
}

bool used(acquire_metrics const& a) { return a.wait.count > 0 || a.hold.count > 0; }

// The acquire families, by primitive (`key` "primitive") or by group of names ("group").
struct acquire_families {
  MetricFamily* acquires;
  MetricFamily* wait;
  MetricFamily* hold;
  MetricFamily* lost;

  acquire_families(families& f, std::string const& prefix, std::string const& by) {
    acquires = &f.family(prefix + "acquires_total", "Acquires that ended, by " + by + " and outcome.",
                         MetricType::Counter);
    wait = &f.family(prefix + "acquire_wait_seconds", "Time from an acquire's call to its end, by " + by + ".",
                     MetricType::Histogram);
    hold = &f.family(prefix + "hold_seconds", "Time from a grant to its release or loss, by " + by + ".",
                     MetricType::Histogram);
    lost = &f.family(prefix + "holds_lost_total", "Holds lost, by " + by + " and cause.", MetricType::Counter);
  }

  void add(families& f, ClientMetric::Label const& who, acquire_metrics const& a) const {
    for (std::size_t o = 0; o < acquire_outcome_count; ++o) {
      auto const outcome = std::string{to_string(static_cast<acquire_outcome>(o))};
      f.series(*acquires, {who, {"outcome", outcome}}).counter.value = static_cast<double>(a.acquires[o]);
    }
    put_histogram(f.series(*wait, {who}), a.wait);
    put_histogram(f.series(*hold, {who}), a.hold);
    for (std::size_t c = 0; c < loss_cause_count; ++c) {
      auto const cause = std::string{to_string(static_cast<loss_cause>(c))};
      f.series(*lost, {who, {"cause", cause}}).counter.value = static_cast<double>(a.lost[c]);
    }
  }
};

}  // namespace

collector::collector(client const& c, std::map<std::string, std::string> labels)
    : client_{c}, labels_{std::move(labels)} {}

std::vector<MetricFamily> collector::Collect() const {
  auto const m = client_.metrics();
  families f{labels_};
  acquire_families const primitives{f, "redisync_", "primitive"};
  for (std::size_t p = 0; p < primitive_count; ++p) {
    // A primitive the client never used adds no series.
    if (!used(m.by_primitive[p])) continue;
    primitives.add(f, {"primitive", std::string{to_string(static_cast<primitive>(p))}}, m.by_primitive[p]);
  }
  if (!m.by_group.empty()) {
    acquire_families const groups{f, "redisync_group_", "group of lock names"};
    for (auto const& g : m.by_group) groups.add(f, {"group", g.group}, g.metrics);
  }
  auto const count = [](auto v) { return static_cast<double>(v); };
  f.counter("redisync_release_failures_total", "Releases that failed and were retried within the lease.",
            count(m.release_failures));
  f.counter("redisync_releases_retried_total", "Failed releases that went through later.", count(m.releases_retried));
  f.counter("redisync_grants_undone_total", "Grants that came after their caller gave up, undone.",
            count(m.grants_undone));
  f.counter("redisync_renewal_calls_total", "Watchdog renewal calls.", count(m.renewal_calls));
  f.counter("redisync_renewed_holds_total", "Holds renewed by the watchdog's calls.", count(m.renewed_holds));
  f.counter("redisync_renewal_failures_total", "Renewal calls that failed.", count(m.renewal_failures));
  f.gauge("redisync_holds", "Holds of this client now.", count(m.holds));
  f.gauge("redisync_waiters", "Acquires waiting now.", count(m.waiters));
  f.gauge("redisync_subscriptions", "Channels subscribed or lingering now.", count(m.subscriptions));
  f.gauge("redisync_connections_up", "Connections with a completed handshake now.", count(m.connections_up));
  f.counter("redisync_connects_total", "Completed handshakes (every one after a node's first is a reconnect).",
            count(m.connects));
  f.counter("redisync_connect_failures_total", "Attempts to connect that failed.", count(m.connect_failures));
  f.counter("redisync_disconnects_total", "Established connections that ended.", count(m.disconnects));
  f.counter("redisync_requests_total", "Requests written to Redis (round trips).", count(m.round_trips));
  f.counter("redisync_socket_writes_total", "Socket writes (each may carry many requests).", count(m.socket_writes));
  f.counter("redisync_script_loads_total", "SCRIPT LOAD commands sent after a NOSCRIPT.", count(m.script_loads));
  return std::move(f).done();
}

exporter::exporter(client const& c, std::string const& bind_address, std::map<std::string, std::string> labels)
    : collector_{std::make_shared<collector>(c, std::move(labels))} {
  try {
    exposer_ = std::make_unique<::prometheus::Exposer>(bind_address);
  } catch (std::exception const& e) {
    throw std::runtime_error{"cannot serve metrics on " + bind_address + ": " + e.what()};
  }
  exposer_->RegisterCollectable(collector_);
}

exporter::~exporter() = default;

int exporter::port() const {
  auto const ports = exposer_->GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

}  // namespace redisync::prometheus
