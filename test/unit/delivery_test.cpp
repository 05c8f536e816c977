#include "io/delivery.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/test/unit_test.hpp>

namespace asio = boost::asio;
using redisync::detail::io::delivery;

BOOST_AUTO_TEST_SUITE(completion_delivery)

// The readers of a cluster's connections share one strand and one delivery: a second reader may
// run and leave the strand inside the step that resumed the first.
BOOST_AUTO_TEST_CASE(every_reader_that_leaves_within_one_step_is_resumed) {
  asio::io_context io;
  auto const strand = asio::make_strand(io);
  auto const d = std::make_shared<delivery>(io.get_executor(), [] {});
  int first_resumed = 0;
  int second_resumed = 0;
  int completions_run = 0;
  auto const first_leaves_again = [&] {
    // The second reader runs on the strand inside the first one's step.
    asio::dispatch(strand, [&] {
      d->leave_with(delivery::call{asio::bind_executor(strand, [&] { ++second_resumed; })});
    });
    d->add(delivery::call{[&] { ++completions_run; }});
    d->leave_with(delivery::call{asio::bind_executor(strand, [&] { ++first_resumed; })});
  };
  asio::dispatch(strand, [&] { d->leave_with(delivery::call{asio::bind_executor(strand, first_leaves_again)}); });
  io.run();
  BOOST_TEST(first_resumed == 1);
  BOOST_TEST(second_resumed == 1);
  BOOST_TEST(completions_run == 1);
}

BOOST_AUTO_TEST_CASE(a_completion_added_while_held_waits_for_the_reader_to_leave) {
  asio::io_context io;
  auto const strand = asio::make_strand(io);
  auto const d = std::make_shared<delivery>(io.get_executor(), [] {});
  bool ran_before_leaving = false;
  bool ran = false;
  asio::post(strand, [&] {
    d->hold();
    d->add(delivery::call{[&] { ran = true; }});
    // The io_context runs whatever else is queued before the reader decides.
    asio::post(io, [&] {
      asio::post(strand, [&] {
        ran_before_leaving = ran;
        d->leave_with(delivery::call{asio::bind_executor(strand, [] {})});
      });
    });
  });
  io.run();
  BOOST_TEST(!ran_before_leaving);
  BOOST_TEST(ran);
}

BOOST_AUTO_TEST_SUITE_END()
