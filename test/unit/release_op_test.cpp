// The release loop as one state machine, without a socket: the acquire loop's fake host, and a
// scripted primitive whose replies the tests choose. One call in the common case; a lost outcome
// asked again in the idempotent form; NOSCRIPT; a refused call made smaller; a refused release
// retried in the background until it goes through or the hold ends.

#include "sync/release_op.hpp"
#include "support/fake_wait_host.hpp"

#include <boost/test/unit_test.hpp>

using namespace std::chrono_literals;
using boost::system::error_code;
using redisync::error;
using redisync::event_kind;
using redisync::test::fake_wait_host;
namespace core = redisync::detail::sync;
namespace io = redisync::detail::io;
namespace resp = redisync::resp;

namespace {

redisync::detail::script const test_script{"test", "sha", "return 1", false};

io::response released() { return {resp::value::make_integer(0)}; }
io::response unreadable() { return {resp::value{resp::type::simple_string, "?"}}; }
io::response server_error(std::string text) { return {resp::value{resp::type::simple_error, std::move(text)}}; }

class scripted_release final : public core::release_op {
 public:
  using release_op::release_op;
  using release_op::send;

  struct call_made {
    bool retry;
    bool by_digest;
  };
  std::vector<call_made> calls;
  std::optional<error_code> result;
  int successes = 0;
  bool succeeded_in_background = false;
  bool hold_lasts = true;       // may_repeat, and with the level on its way out, the background
  bool asks_more = false;       // a hand-off on top of the release, until the server refuses it
  int asked_less = 0;
  int failed_calls = 0;

 private:
  redisync::detail::script const& release_script() const override { return test_script; }
  io::outgoing call(bool retry, bool by_digest) override {
    calls.push_back({retry, by_digest});
    return {};
  }
  bool read(resp::value const& reply) override { return reply.kind() == resp::type::integer; }
  bool may_repeat() const override { return hold_lasts; }
  bool goes_on_in_background() const override { return hold_lasts; }
  bool ask_less() override {
    if (!std::exchange(asks_more, false)) return false;
    ++asked_less;
    return true;
  }
  void call_failed() override { ++failed_calls; }
  void succeeded() override {
    ++successes;
    succeeded_in_background = in_background();
    if (!in_background()) result = error_code{};
  }
  void complete(error_code ec) override { result = ec; }
};

struct fixture {
  std::shared_ptr<fake_wait_host> host = std::make_shared<fake_wait_host>();
  ~fixture() { host->drop_pending(); }

  std::shared_ptr<scripted_release> start(bool asks_more = false) {
    auto op = std::make_shared<scripted_release>(host, core::release_op::params{"lock", "owner-1", 0});
    op->asks_more = asks_more;
    op->send();
    return op;
  }
  bool emitted(event_kind k) const { return std::ranges::find(host->events, k) != host->events.end(); }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(release_loop)

BOOST_AUTO_TEST_CASE(the_common_case_is_one_call_completed_from_its_reply) {
  fixture f;
  auto op = f.start();
  BOOST_TEST_REQUIRE(op->calls.size() == 1u);
  BOOST_TEST(!op->calls[0].retry);
  BOOST_TEST(op->calls[0].by_digest);
  f.host->reply({}, released());
  BOOST_TEST(op->successes == 1);
  BOOST_TEST_REQUIRE(op->result.has_value());
  BOOST_TEST(!*op->result);
  BOOST_TEST(op->calls.size() == 1u);
  BOOST_TEST(!f.host->next_alarm().has_value());
  BOOST_TEST(f.host->events.empty());
}

BOOST_AUTO_TEST_CASE(a_lost_outcome_is_asked_again_in_the_idempotent_form_while_the_hold_lasts) {
  fixture f;
  auto op = f.start();
  f.host->reply(error::ambiguous);
  f.host->reply(error::ambiguous);
  BOOST_TEST_REQUIRE(op->calls.size() == 3u);
  BOOST_TEST(op->calls[1].retry);
  BOOST_TEST(op->calls[2].retry);
  BOOST_TEST(!op->result.has_value());
  f.host->reply({}, released());
  BOOST_TEST(op->successes == 1);
  BOOST_TEST(f.emitted(event_kind::outcome_resolved));
}

BOOST_AUTO_TEST_CASE(a_lost_outcome_with_no_hold_left_is_the_callers_error) {
  fixture f;
  auto op = f.start();
  op->hold_lasts = false;
  f.host->reply(error::ambiguous);
  BOOST_TEST(op->calls.size() == 1u);
  BOOST_TEST_REQUIRE(op->result.has_value());
  BOOST_TEST((*op->result == error::ambiguous));
  BOOST_TEST(op->failed_calls == 1);
  BOOST_TEST(!f.host->next_alarm().has_value());
}

BOOST_AUTO_TEST_CASE(unreadable_replies_count_as_lost_outcomes_twice_then_fail) {
  fixture f;
  auto op = f.start();
  op->hold_lasts = true;
  f.host->reply({}, unreadable());
  f.host->reply({}, unreadable());
  BOOST_TEST(op->calls.size() == 3u);
  BOOST_TEST(!op->result.has_value());
  op->hold_lasts = false;  // (else the release would go on in the background)
  f.host->reply({}, unreadable());
  BOOST_TEST_REQUIRE(op->result.has_value());
  BOOST_TEST((*op->result == error::unexpected_reply));
}

BOOST_AUTO_TEST_CASE(noscript_loads_the_script_and_sends_the_same_call_again) {
  fixture f;
  auto op = f.start();
  f.host->reply({}, server_error("NOSCRIPT No matching script"));
  BOOST_TEST(f.host->loads.size() == 1u);
  BOOST_TEST(op->calls.size() == 1u);  // nothing before the load
  f.host->loads.back()({});
  BOOST_TEST_REQUIRE(op->calls.size() == 2u);
  BOOST_TEST(!op->calls[1].retry);
  BOOST_TEST(op->calls[1].by_digest);
  // A server that keeps forgetting it gets the source itself.
  f.host->reply({}, server_error("NOSCRIPT No matching script"));
  f.host->loads.back()({});
  f.host->reply({}, server_error("NOSCRIPT No matching script"));
  f.host->loads.back()({});
  BOOST_TEST_REQUIRE(op->calls.size() == 4u);
  BOOST_TEST(!op->calls[3].by_digest);
  f.host->reply({}, released());
  BOOST_TEST(op->successes == 1);
}

BOOST_AUTO_TEST_CASE(a_script_that_cannot_be_loaded_undoes_the_call_and_fails) {
  fixture f;
  auto op = f.start();
  op->hold_lasts = false;
  f.host->reply({}, server_error("NOSCRIPT No matching script"));
  f.host->loads.back()(error::no_permission);
  BOOST_TEST(op->failed_calls == 1);
  BOOST_TEST_REQUIRE(op->result.has_value());
  BOOST_TEST((*op->result == error::no_permission));
  BOOST_TEST(op->calls.size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_refused_call_asks_for_the_release_alone_and_goes_again) {
  fixture f;
  auto op = f.start(true);
  f.host->reply({}, server_error("OOM command not allowed when used memory > 'maxmemory'"));
  BOOST_TEST(op->asked_less == 1);
  BOOST_TEST_REQUIRE(op->calls.size() == 2u);
  BOOST_TEST(!op->result.has_value());
  f.host->reply({}, released());
  BOOST_TEST(op->successes == 1);
  BOOST_TEST(op->failed_calls == 0);
}

BOOST_AUTO_TEST_CASE(a_refused_release_answers_the_caller_and_goes_on_in_the_background_until_it_goes_through) {
  fixture f;
  auto op = f.start();
  f.host->reply({}, server_error("OOM command not allowed when used memory > 'maxmemory'"));
  BOOST_TEST_REQUIRE(op->result.has_value());
  BOOST_TEST((*op->result == error::out_of_memory));
  BOOST_TEST(f.emitted(event_kind::release_failed));
  // 50 ms, then doubling.
  auto const start = f.host->clock;
  BOOST_TEST_REQUIRE(f.host->next_alarm().has_value());
  BOOST_TEST((*f.host->next_alarm() == start + 50ms));
  f.host->advance_to(start + 50ms);
  BOOST_TEST(op->calls.size() == 2u);
  f.host->reply({}, server_error("OOM command not allowed when used memory > 'maxmemory'"));
  BOOST_TEST((*f.host->next_alarm() == start + 150ms));
  f.host->advance_to(start + 150ms);
  BOOST_TEST_REQUIRE(op->calls.size() == 3u);
  BOOST_TEST(!op->calls[2].retry);
  f.host->reply({}, released());
  BOOST_TEST(op->successes == 1);
  BOOST_TEST(op->succeeded_in_background);
  BOOST_TEST(!f.host->next_alarm().has_value());
}

BOOST_AUTO_TEST_CASE(the_background_release_stops_when_the_hold_ends) {
  fixture f;
  auto op = f.start();
  f.host->reply({}, server_error("READONLY You can't write against a read only replica."));
  BOOST_TEST_REQUIRE(f.host->next_alarm().has_value());
  op->hold_lasts = false;  // lost meanwhile: nothing left to release
  f.host->advance_to(*f.host->next_alarm());
  BOOST_TEST(op->calls.size() == 1u);
  BOOST_TEST(!f.host->next_alarm().has_value());
}

BOOST_AUTO_TEST_SUITE_END()
