// The metrics registry without a client: durations land in the bucket of their upper bound and
// read back cumulative, outcomes are named as the caller saw them, and groups stay bounded.

#include <redisync/error.hpp>

#include "metrics/metrics_registry.hpp"

#include <boost/asio/error.hpp>
#include <boost/test/unit_test.hpp>

#include <cmath>

namespace metrics = redisync::detail::metrics;
using namespace std::chrono_literals;
using redisync::acquire_outcome;
using redisync::loss_cause;
using redisync::primitive;

BOOST_AUTO_TEST_SUITE(metrics_registry)

BOOST_AUTO_TEST_CASE(a_duration_counts_in_the_bucket_of_its_upper_bound_and_every_one_above) {
  metrics::duration_recorder r;
  r.observe(100us);   // exactly on the first bound: in it
  r.observe(101us);   // just past it: in the second
  r.observe(2s);      // in the 2.5 s bucket
  r.observe(1h);      // past the last bound: +Inf only
  r.observe(-5ms);    // a clock that went back counts as zero
  auto const h = r.snapshot();
  BOOST_TEST_REQUIRE(h.upper_bounds_s.size() == h.cumulative_counts.size());
  BOOST_TEST(std::isinf(h.upper_bounds_s.back()));
  BOOST_TEST(h.cumulative_counts[0] == 2u);  // 100 µs and the negative one
  BOOST_TEST(h.cumulative_counts[1] == 3u);
  auto const at = [&](double bound) {
    for (std::size_t i = 0; i < h.upper_bounds_s.size(); ++i) {
      if (h.upper_bounds_s[i] == bound) return h.cumulative_counts[i];
    }
    return std::uint64_t{999};
  };
  BOOST_TEST(at(1.0) == 3u);
  BOOST_TEST(at(2.5) == 4u);
  BOOST_TEST(at(300.0) == 4u);
  BOOST_TEST(h.cumulative_counts.back() == 5u);
  BOOST_TEST(h.count == 5u);
  BOOST_TEST(h.sum_s == 0.0001 + 0.000101 + 2 + 3600, boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(an_outcome_is_what_the_caller_got) {
  BOOST_TEST((metrics::outcome_of({}, true) == acquire_outcome::acquired));
  BOOST_TEST((metrics::outcome_of({}, false) == acquire_outcome::timed_out));
  BOOST_TEST((metrics::outcome_of(boost::asio::error::operation_aborted, false) == acquire_outcome::cancelled));
  BOOST_TEST((metrics::outcome_of(redisync::error::timeout, false) == acquire_outcome::failed));
  BOOST_TEST((metrics::outcome_of(redisync::error::wrong_type, false) == acquire_outcome::failed));
}

BOOST_AUTO_TEST_CASE(acquires_holds_and_losses_are_kept_by_primitive) {
  metrics::metrics_registry r{"", 10};
  r.acquire_ended(primitive::fair_lock, "a", acquire_outcome::acquired, 1ms);
  r.acquire_ended(primitive::fair_lock, "a", acquire_outcome::cancelled, 2ms);
  r.hold_ended(primitive::fair_lock, "a", 5ms, std::nullopt);
  r.hold_ended(primitive::fair_lock, "a", 5ms, loss_cause::expired);
  r.count(redisync::event_kind::connected);
  r.count(redisync::event_kind::connected);
  r.count(redisync::event_kind::disconnected);
  auto const s = r.snapshot();
  auto const& fair = s.of(primitive::fair_lock);
  BOOST_TEST(fair.acquired(acquire_outcome::acquired) == 1u);
  BOOST_TEST(fair.acquired(acquire_outcome::cancelled) == 1u);
  BOOST_TEST(fair.wait.count == 2u);
  BOOST_TEST(fair.hold.count == 2u);
  BOOST_TEST(fair.lost_by(loss_cause::expired) == 1u);
  BOOST_TEST(s.of(primitive::lock).wait.count == 0u);
  BOOST_TEST(s.by_group.empty());  // no separator: no groups
  BOOST_TEST(s.disconnects == 1u);
  BOOST_TEST(s.connections_up == 1u);
}

BOOST_AUTO_TEST_CASE(groups_past_the_limit_count_as_other) {
  metrics::metrics_registry r{"/", 2};
  r.acquire_ended(primitive::lock, "jobs/1", acquire_outcome::acquired, 1ms);
  r.acquire_ended(primitive::lock, "mail/9", acquire_outcome::acquired, 1ms);
  r.acquire_ended(primitive::lock, "carts/3", acquire_outcome::acquired, 1ms);  // a third group
  r.acquire_ended(primitive::lock, "jobs/2", acquire_outcome::timed_out, 1ms);
  r.hold_ended(primitive::lock, "nogroup", 1ms, loss_cause::gone);
  auto const s = r.snapshot();
  BOOST_TEST_REQUIRE(s.by_group.size() == 3u);  // jobs, mail, other
  BOOST_TEST(s.by_group[0].group == "jobs");
  BOOST_TEST(s.by_group[0].metrics.acquired(acquire_outcome::timed_out) == 1u);
  BOOST_TEST(s.by_group[1].group == "mail");
  BOOST_TEST(s.by_group[2].group == "other");
  BOOST_TEST(s.by_group[2].metrics.acquired(acquire_outcome::acquired) == 1u);
  BOOST_TEST(s.by_group[2].metrics.lost_by(loss_cause::gone) == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
