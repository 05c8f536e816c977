#include "io/reply_spin.hpp"

#include <boost/test/unit_test.hpp>

using redisync::detail::io::reply_spin;

namespace {

// How many waits in a row sleep at once before the policy polls again.
int waits_slept_before_the_next_poll(reply_spin& spin) {
  int slept = 0;
  while (!spin.should_spin()) ++slept;
  return slept;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(reply_spin_policy)

BOOST_AUTO_TEST_CASE(polls_while_replies_come_in_time) {
  reply_spin spin;
  for (int i = 0; i < 100; ++i) {
    BOOST_TEST(spin.should_spin());
    spin.on_reply_in_time(true);
  }
}

BOOST_AUTO_TEST_CASE(each_late_reply_in_a_row_doubles_the_waits_that_sleep_at_once) {
  reply_spin spin;
  for (int expected : {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 1024, 1024}) {
    BOOST_TEST_REQUIRE(spin.should_spin());
    spin.on_reply_late();
    BOOST_TEST(waits_slept_before_the_next_poll(spin) == expected);
  }
}

BOOST_AUTO_TEST_CASE(a_reply_in_time_ends_the_back_off) {
  reply_spin spin;
  for (int i = 0; i < 5; ++i) {
    spin.should_spin();
    spin.on_reply_late();
    waits_slept_before_the_next_poll(spin);
  }
  spin.on_reply_in_time(true);
  BOOST_TEST(spin.should_spin());
  spin.on_reply_late();
  BOOST_TEST(waits_slept_before_the_next_poll(spin) == 1);
}

BOOST_AUTO_TEST_CASE(a_reply_that_was_there_at_once_leaves_the_back_off) {
  reply_spin spin;
  spin.should_spin();
  spin.on_reply_late();
  BOOST_TEST(waits_slept_before_the_next_poll(spin) == 1);
  spin.on_reply_in_time(false);  // proves nothing about polling
  spin.on_reply_late();
  BOOST_TEST(waits_slept_before_the_next_poll(spin) == 2);
}

BOOST_AUTO_TEST_SUITE_END()
