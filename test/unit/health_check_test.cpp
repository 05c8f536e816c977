// The health check with a fake clock: a healthy connection is never given up, a silent one is.

#include "io/health_check.hpp"

#include <boost/test/unit_test.hpp>

using redisync::detail::io::health_check;
using action = health_check::action;
using namespace std::chrono_literals;

namespace {

health_check::clock::time_point const start{std::chrono::seconds{1000}};

}  // namespace

BOOST_AUTO_TEST_SUITE(health_checks)

BOOST_AUTO_TEST_CASE(an_idle_connection_is_pinged_after_an_interval_of_silence) {
  health_check h{2s, start};
  BOOST_TEST((h.next_check() == start + 2s));
  BOOST_TEST((h.on_timer(start + 1999ms) == action::none));
  BOOST_TEST((h.on_timer(start + 2s) == action::ping));
  BOOST_TEST((h.on_timer(start + 3s) == action::none));  // one ping outstanding is enough
}

// The old check looked once per interval and failed after two intervals without a read: a PING
// answered just before a tick meant no PING at that tick and a failure at the next.
BOOST_AUTO_TEST_CASE(a_pong_that_comes_just_before_a_check_never_makes_an_idle_connection_fail) {
  health_check h{2s, start};
  auto now = start;
  for (int i = 0; i < 1000; ++i) {
    now = h.next_check();
    auto const a = h.on_timer(now);
    BOOST_TEST_REQUIRE((a != action::fail), "failed at check " << i);
    if (a == action::ping) {
      auto const pong_at = now + 1999ms;  // just before the next check
      h.on_read(pong_at);
      h.on_pong();
    }
  }
}

BOOST_AUTO_TEST_CASE(a_ping_without_reply_for_a_full_interval_of_silence_fails_the_connection) {
  health_check h{2s, start};
  BOOST_TEST((h.on_timer(start + 2s) == action::ping));
  BOOST_TEST((h.next_check() == start + 4s));
  BOOST_TEST((h.on_timer(start + 3999ms) == action::none));
  BOOST_TEST((h.on_timer(start + 4s) == action::fail));
}

BOOST_AUTO_TEST_CASE(reads_while_a_ping_is_outstanding_show_the_server_alive) {
  health_check h{2s, start};
  BOOST_TEST((h.on_timer(start + 2s) == action::ping));
  h.on_read(start + 3s);  // other replies arrive before the PING's
  BOOST_TEST((h.on_timer(start + 4s) == action::none));
  BOOST_TEST((h.next_check() == start + 5s));
  BOOST_TEST((h.on_timer(start + 5s) == action::fail));
}

BOOST_AUTO_TEST_CASE(a_busy_connection_is_never_pinged) {
  health_check h{2s, start};
  for (int i = 1; i <= 100; ++i) {
    h.on_read(start + i * 1s);
    BOOST_TEST((h.on_timer(start + i * 1s + 500ms) == action::none));
  }
}

BOOST_AUTO_TEST_CASE(an_interval_of_zero_turns_the_check_off) {
  health_check h{0ms, start};
  BOOST_TEST(!h.enabled());
  BOOST_TEST((h.on_timer(start + 1h) == action::none));
}

BOOST_AUTO_TEST_SUITE_END()
