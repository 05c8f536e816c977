// The client's channels without a server: (un)subscriptions go to a fake that records them and
// confirms when the test says, on an io_context with a short linger. One SUBSCRIBE per channel
// however many waiters; the last one gone starts the linger, after which the channel goes; taken
// again meanwhile it costs nothing; unwanted messages drop it early; flush drops every unused
// channel with one command per slot; a refused subscription tells every waiter.

#include "sync/channels.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>

using namespace std::chrono_literals;
using boost::system::error_code;
namespace asio = boost::asio;
namespace core = redisync::detail::sync;
namespace io = redisync::detail::io;

namespace {

class fake_subscription_io final : public core::subscription_io {
 public:
  struct request {
    bool on;
    redisync::detail::routing::slot_type slot;
    std::vector<std::string> channels;
    asio::any_completion_handler<void(error_code)> done;
  };
  explicit fake_subscription_io(asio::any_io_executor ex) : ex_{std::move(ex)} {}
  asio::any_io_executor strand() const override { return ex_; }
  void subscribe(bool on, redisync::detail::routing::slot_type slot, std::vector<std::string> channels,
                 asio::any_completion_handler<void(error_code)> handler) override {
    requests.push_back({on, slot, std::move(channels), std::move(handler)});
  }
  // Answers the oldest request not answered yet.
  void answer(error_code ec = {}) {
    for (auto& r : requests) {
      if (!r.done) continue;
      std::move(r.done)(ec);
      return;
    }
    BOOST_FAIL("no request to answer");
  }
  std::size_t count(bool on) const {
    return static_cast<std::size_t>(std::count_if(requests.begin(), requests.end(), [&](auto const& r) { return r.on == on; }));
  }
  std::vector<request> requests;

 private:
  asio::any_io_executor ex_;
};

struct channels_env {
  asio::io_context ctx;
  fake_subscription_io io{ctx.get_executor()};
  core::channels channels{io, 300ms, [] { return std::shared_ptr<void>{}; }};
  std::vector<error_code> confirmed;

  void take(std::string const& channel, redisync::detail::routing::slot_type slot = 0) {
    channels.acquire(channel, slot, [this](error_code ec) { confirmed.push_back(ec); });
  }
  // Runs the io_context's due work (the linger timers among it) for `d`.
  void run_for(std::chrono::milliseconds d) {
    ctx.run_for(d);
    ctx.restart();
  }
  ~channels_env() {
    channels.stop();
    run_for(5ms);
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(channels)

BOOST_FIXTURE_TEST_CASE(one_subscribe_serves_every_waiter_of_a_channel, channels_env) {
  take("a");
  take("a");
  BOOST_TEST(io.count(true) == 1u);
  BOOST_TEST(confirmed.empty());
  io.answer();
  run_for(1ms);
  BOOST_TEST(confirmed.size() == 2u);
  take("a");  // subscribed already: confirmed at once
  BOOST_TEST(confirmed.size() == 3u);
  BOOST_TEST(io.count(true) == 1u);
  BOOST_TEST(channels.count() == 1u);
}

BOOST_FIXTURE_TEST_CASE(the_last_waiter_gone_starts_the_linger_after_which_the_channel_goes, channels_env) {
  take("a");
  io.answer();
  run_for(1ms);
  channels.release("a");
  run_for(30ms);
  BOOST_TEST(io.count(false) == 0u);  // lingering
  run_for(600ms);
  BOOST_TEST_REQUIRE(io.count(false) == 1u);
  io.answer();
  run_for(1ms);
  BOOST_TEST(channels.count() == 0u);
}

BOOST_FIXTURE_TEST_CASE(a_channel_taken_again_while_it_lingers_costs_no_command, channels_env) {
  take("a");
  io.answer();
  run_for(1ms);
  channels.release("a");
  run_for(30ms);
  take("a");
  run_for(600ms);
  BOOST_TEST(io.requests.size() == 1u);
  BOOST_TEST(confirmed.size() == 2u);
}

BOOST_FIXTURE_TEST_CASE(unwanted_messages_drop_a_lingering_channel_before_its_linger_ends, channels_env) {
  take("a");
  io.answer();
  run_for(1ms);
  channels.release("a");
  for (std::size_t i = 1; i < core::channels::unwanted_messages_to_drop; ++i) channels.drop_unwanted("a");
  BOOST_TEST(io.count(false) == 0u);  // one short: kept
  channels.drop_unwanted("a");
  BOOST_TEST(io.count(false) == 1u);
}

BOOST_FIXTURE_TEST_CASE(flush_drops_every_unused_channel_with_one_command_per_slot, channels_env) {
  take("a", 1);
  take("b", 1);
  take("c", 2);
  take("kept", 3);
  for (int i = 0; i < 4; ++i) io.answer();
  run_for(1ms);
  for (auto const* name : {"a", "b", "c"}) channels.release(name);
  bool flushed = false;
  channels.flush([&](error_code ec) { flushed = !ec; });
  BOOST_TEST_REQUIRE(io.count(false) == 2u);
  for (auto const& r : io.requests) {
    if (!r.on) BOOST_TEST(r.channels.size() == (r.slot == 1 ? 2u : 1u));
  }
  io.answer();
  io.answer();
  run_for(1ms);
  BOOST_TEST(flushed);
  BOOST_TEST(channels.count() == 1u);  // the one still used
}

BOOST_FIXTURE_TEST_CASE(a_refused_subscription_tells_every_waiter_and_the_next_one_asks_again, channels_env) {
  take("a");
  take("a");
  io.answer(redisync::error::no_permission);
  run_for(1ms);
  BOOST_TEST_REQUIRE(confirmed.size() == 2u);
  BOOST_TEST((confirmed[0] == redisync::error::no_permission));
  BOOST_TEST((confirmed[1] == redisync::error::no_permission));
  take("a");
  BOOST_TEST(io.count(true) == 2u);
}

BOOST_AUTO_TEST_SUITE_END()
