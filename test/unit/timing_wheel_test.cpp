#include "sync/timing_wheel.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>

using namespace std::chrono_literals;
using wheel = redisync::detail::sync::timing_wheel<int>;
using time_point = wheel::time_point;

namespace {

// A fake clock: the wheel never reads time itself.
struct fake_clock {
  time_point now{std::chrono::seconds{1000}};
  void advance(std::chrono::milliseconds d) { now += d; }
};

std::vector<int> fire(wheel& w, time_point now) {
  std::vector<int> out;
  w.advance(now, out);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(timing_wheel)

BOOST_AUTO_TEST_CASE(entries_fire_at_their_tick_not_before) {
  fake_clock clock;
  wheel w{10ms, 64, clock.now};
  wheel::handle a, b;
  w.schedule(a, clock.now + 25ms, 1);
  w.schedule(b, clock.now + 100ms, 2);
  BOOST_TEST(w.size() == 2u);
  clock.advance(20ms);
  BOOST_TEST(fire(w, clock.now).empty());
  clock.advance(10ms);  // 30 ms: past 25 ms, rounded up to the 30 ms tick
  BOOST_TEST(fire(w, clock.now) == std::vector<int>{1});
  clock.advance(70ms);
  BOOST_TEST(fire(w, clock.now) == std::vector<int>{2});
  BOOST_TEST(w.size() == 0u);
}

BOOST_AUTO_TEST_CASE(entries_due_in_the_same_tick_fire_together) {
  fake_clock clock;
  wheel w{25ms, 512, clock.now};
  std::vector<wheel::handle> handles(1000);
  for (int i = 0; i < 1000; ++i) w.schedule(handles[i], clock.now + 10s + std::chrono::milliseconds{i % 20}, i);
  clock.advance(10s + 25ms);
  BOOST_TEST(fire(w, clock.now).size() == 1000u);
}

BOOST_AUTO_TEST_CASE(cancelled_entries_never_fire) {
  fake_clock clock;
  wheel w{10ms, 16, clock.now};
  wheel::handle a, b;
  w.schedule(a, clock.now + 50ms, 1);
  w.schedule(b, clock.now + 50ms, 2);
  w.cancel(a);
  w.cancel(a);  // twice is harmless
  BOOST_TEST(!a.active());
  clock.advance(1s);
  BOOST_TEST(fire(w, clock.now) == std::vector<int>{2});
}

// The watchdog handles what fired in one tick one entry at a time; handling one (a hold that is
// lost) cancels the hold's other entry, which the same tick may already have taken out.
BOOST_AUTO_TEST_CASE(cancelling_an_entry_that_fired_in_the_same_tick_is_harmless) {
  fake_clock clock;
  wheel w{10ms, 16, clock.now};
  wheel::handle renewal, validity, other;
  w.schedule(renewal, clock.now + 20ms, 1);
  w.schedule(validity, clock.now + 20ms, 2);
  w.schedule(other, clock.now + 20ms, 3);
  clock.advance(20ms);
  std::vector<int> fired;
  w.advance(clock.now, fired);
  BOOST_TEST(fired.size() == 3u);
  BOOST_TEST(!renewal.active());
  BOOST_TEST(!validity.active());
  w.cancel(renewal);
  w.cancel(validity);
  BOOST_TEST(w.size() == 0u);
  // The handles can be scheduled again, and the wheel still works.
  w.schedule(renewal, clock.now + 30ms, 1);
  w.cancel(validity);
  BOOST_TEST(w.size() == 1u);
  clock.advance(30ms);
  BOOST_TEST(fire(w, clock.now) == std::vector<int>{1});
}

BOOST_AUTO_TEST_CASE(a_handle_destroyed_while_scheduled_leaves_the_wheel) {
  fake_clock clock;
  wheel w{10ms, 16, clock.now};
  {
    wheel::handle gone;
    w.schedule(gone, clock.now + 20ms, 1);
    BOOST_TEST(w.size() == 1u);
  }
  BOOST_TEST(w.size() == 0u);
  clock.advance(1s);
  BOOST_TEST(fire(w, clock.now).empty());
}

BOOST_AUTO_TEST_CASE(rescheduling_replaces_the_old_entry) {
  fake_clock clock;
  wheel w{10ms, 16, clock.now};
  wheel::handle a;
  w.schedule(a, clock.now + 20ms, 1);
  w.schedule(a, clock.now + 500ms, 1);
  BOOST_TEST(w.size() == 1u);
  clock.advance(100ms);
  BOOST_TEST(fire(w, clock.now).empty());
  clock.advance(400ms);
  BOOST_TEST(fire(w, clock.now) == std::vector<int>{1});
}

BOOST_AUTO_TEST_CASE(entries_beyond_one_revolution_wait_their_round) {
  fake_clock clock;
  wheel w{10ms, 8, clock.now};  // one revolution = 80 ms
  wheel::handle far, near;
  w.schedule(far, clock.now + 250ms, 1);
  w.schedule(near, clock.now + 30ms, 2);
  for (int i = 0; i < 24; ++i) {
    clock.advance(10ms);
    auto const fired = fire(w, clock.now);
    BOOST_TEST((fired == (i == 2 ? std::vector<int>{2} : std::vector<int>{})), "step " << i);
  }
  clock.advance(10ms);
  BOOST_TEST(fire(w, clock.now) == std::vector<int>{1});
}

BOOST_AUTO_TEST_CASE(a_long_pause_fires_everything_that_is_due) {
  fake_clock clock;
  wheel w{10ms, 8, clock.now};
  wheel::handle a, b, c;
  w.schedule(a, clock.now + 30ms, 1);
  w.schedule(b, clock.now + 500ms, 2);
  w.schedule(c, clock.now + 5s, 3);
  clock.advance(1s);  // many revolutions in one step
  BOOST_TEST((fire(w, clock.now) == std::vector<int>{1, 2}));
  clock.advance(4s);
  BOOST_TEST(fire(w, clock.now) == std::vector<int>{3});
}

BOOST_AUTO_TEST_CASE(a_time_in_the_past_fires_on_the_next_advance) {
  fake_clock clock;
  wheel w{10ms, 8, clock.now};
  clock.advance(100ms);
  std::vector<int> out;
  w.advance(clock.now, out);
  wheel::handle a;
  w.schedule(a, clock.now - 50ms, 7);
  clock.advance(10ms);
  BOOST_TEST(fire(w, clock.now) == std::vector<int>{7});
}

BOOST_AUTO_TEST_CASE(next_due_reports_the_earliest_tick) {
  fake_clock clock;
  wheel w{10ms, 8, clock.now};
  BOOST_TEST(!w.next_due().has_value());
  wheel::handle a, b;
  w.schedule(a, clock.now + 300ms, 1);
  w.schedule(b, clock.now + 45ms, 2);
  BOOST_TEST((*w.next_due() == clock.now + 50ms));
  w.cancel(b);
  BOOST_TEST((*w.next_due() == clock.now + 300ms));
}

BOOST_AUTO_TEST_CASE(firing_time_is_the_tick_an_entry_fires_in) {
  fake_clock clock;
  wheel w{10ms, 8, clock.now};
  BOOST_TEST((w.firing_time(clock.now + 25ms) == clock.now + 30ms));
  BOOST_TEST((w.firing_time(clock.now + 30ms) == clock.now + 30ms));
  BOOST_TEST((w.firing_time(clock.now - 5s) == clock.now + 10ms));  // the past fires next tick
}

BOOST_AUTO_TEST_SUITE_END()
