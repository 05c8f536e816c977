// The watchdog without a server: renewal calls go to a fake that records them and answers as the
// test says, on an io_context with short leases. Renewals a third of the lease after the grant, one
// call per kind, lease and slot of at most 100 holds; a hold the server no longer has lost at once;
// an unknown answer makes the hold uncertain, and lost at its deadline unless a retry gets through;
// while disconnected a renewal makes its holds uncertain; a kind that settles its own answers (the
// client's liveness beat) is told each one and never lost.

#include "sync/lease_registry.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <map>
#include <set>

using namespace std::chrono_literals;
using boost::system::error_code;
namespace asio = boost::asio;
namespace core = redisync::detail::sync;
namespace resp = redisync::resp;
using redisync::hold_status;

namespace {

redisync::detail::script const renew_script{"renew", "sha", "return 1", false};

// Renews holds by owner: the call's argv is the owners, in the order the kind left them.
class test_renewal_kind final : public core::renewal_kind {
 public:
  redisync::detail::script const& renewal_script() const override { return renew_script; }
  redisync::detail::script_args renewal_args(std::span<std::shared_ptr<core::hold_state>> holds,
                                             std::chrono::milliseconds) const override {
    redisync::detail::script_args args;
    for (auto const& h : holds) args.argv.push_back(h->owner);
    return args;
  }
};
test_renewal_kind const kind;

// Renews something that is no hold (as the client's liveness beat): settles every answer itself,
// and goes on renewing whatever the flag.
class beat_kind final : public core::renewal_kind {
 public:
  redisync::detail::script const& renewal_script() const override { return renew_script; }
  redisync::detail::script_args renewal_args(std::span<std::shared_ptr<core::hold_state>> holds,
                                             std::chrono::milliseconds lease) const override {
    return kind.renewal_args(holds, lease);
  }
  void settle(core::lease_registry& leases, std::shared_ptr<core::hold_state> const& beat, std::int64_t flag,
              core::clock_type::time_point sent, error_code) const override {
    flags.push_back(flag);
    leases.schedule_renewal(beat, sent);
  }
  bool endangered_when_disconnected() const noexcept override { return false; }

  mutable std::vector<std::int64_t> flags;
};

class fake_renewal_io final : public core::renewal_io {
 public:
  struct call {
    redisync::detail::routing::slot_type slot;
    std::vector<std::string> owners;
  };
  explicit fake_renewal_io(asio::any_io_executor ex) : ex_{std::move(ex)} {}
  asio::any_io_executor strand() const override { return ex_; }
  bool connected(redisync::detail::routing::slot_type) const override { return up; }
  asio::awaitable<std::tuple<error_code, resp::value>> run(redisync::detail::script const&,
                                                          redisync::detail::routing::slot_type slot,
                                                          redisync::detail::script_args args,
                                                          resp::request::options) override {
    calls.push_back({slot, args.argv});
    if (fails) co_return std::tuple{error_code{redisync::error::ambiguous}, resp::value{}};
    std::vector<resp::value> flags;
    for (auto const& owner : args.argv) flags.push_back(resp::value::make_integer(gone.contains(owner) ? 0 : 1));
    co_return std::tuple{error_code{}, resp::value::make_aggregate(resp::type::array, std::move(flags))};
  }

  bool up = true;
  bool fails = false;               // every call's outcome is lost
  std::set<std::string> gone;       // owners the server no longer has
  std::vector<call> calls;

 private:
  asio::any_io_executor ex_;
};

struct registry_env {
  asio::io_context ctx;
  fake_renewal_io io{ctx.get_executor()};
  std::vector<std::string> lost;
  std::vector<redisync::event_kind> events;
  core::lease_registry leases{io, 5ms,
                              {.anchor = [] { return std::shared_ptr<void>{}; },
                               .lose =
                                   [this](std::shared_ptr<core::hold_state> const& h, redisync::loss_cause) {
                                     h->status = hold_status::lost;
                                     lost.push_back(h->owner);
                                     leases.forget(*h);
                                   },
                               .emit = [this](redisync::event_kind k, redisync::event_level, std::string_view,
                                              std::string_view, error_code, std::string_view) { events.push_back(k); }}};

  // A hold granted now with `lease`, renewed by the watchdog.
  std::shared_ptr<core::hold_state> hold(std::string owner, std::chrono::milliseconds lease,
                                         redisync::detail::routing::slot_type slot = 0) {
    auto h = std::make_shared<core::hold_state>();
    h->name = "lock";
    h->owner = std::move(owner);
    h->slot = slot;
    h->renewal = &kind;
    h->lease = lease;
    h->watchdog = true;
    h->granted = true;
    h->add_level();
    auto const now = core::clock_type::now();
    h->set_valid_until(core::validity_deadline(now, lease));
    leases.schedule_renewal(h, now);
    leases.schedule_validity_check(h);
    return h;
  }

  // Runs the io_context until `done` holds or `limit` passes.
  bool run_until(std::function<bool()> done, std::chrono::milliseconds limit) {
    auto const end = std::chrono::steady_clock::now() + limit;
    while (!done() && std::chrono::steady_clock::now() < end) {
      ctx.run_for(2ms);
      ctx.restart();
    }
    return done();
  }

  ~registry_env() {
    leases.stop();
    ctx.run_for(10ms);
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(lease_registry)

BOOST_FIXTURE_TEST_CASE(holds_due_together_are_renewed_in_one_call_per_lease_and_slot, registry_env) {
  auto a = hold("a", 300ms), b = hold("b", 300ms), c = hold("c", 300ms, 7), d = hold("d", 600ms);
  auto const start = core::clock_type::now();
  BOOST_TEST_REQUIRE(run_until([&] { return io.calls.size() >= 2; }, 2s));
  auto const first = core::clock_type::now() - start;
  // A third of the lease after the grant (the wheel's tick of 5 ms late at most, plus the noise).
  BOOST_TEST((first >= 95ms));
  BOOST_TEST((first < 600ms));
  std::map<std::size_t, std::vector<std::string>> by_slot;
  for (auto const& call : io.calls) by_slot[call.slot].insert(by_slot[call.slot].end(), call.owners.begin(), call.owners.end());
  BOOST_TEST((by_slot[0] == std::vector<std::string>{"a", "b"}));
  BOOST_TEST((by_slot[7] == std::vector<std::string>{"c"}));
  BOOST_TEST((a->status == hold_status::held));
  BOOST_TEST(run_until([&] { return leases.renewal_calls() >= 6; }, 2s));
  BOOST_TEST((d->status == hold_status::held));
  BOOST_TEST(lost.empty());
}

BOOST_FIXTURE_TEST_CASE(a_call_carries_at_most_a_hundred_holds, registry_env) {
  std::vector<std::shared_ptr<core::hold_state>> holds;
  for (int i = 0; i < 250; ++i) holds.push_back(hold("o" + std::to_string(i), 300ms));
  BOOST_TEST_REQUIRE(run_until([&] { return leases.renewals() >= 250; }, 2s));
  for (auto const& call : io.calls) BOOST_TEST(call.owners.size() <= core::renewals_per_call);
  BOOST_TEST(io.calls.size() >= 3u);
}

BOOST_FIXTURE_TEST_CASE(a_hold_the_server_no_longer_has_is_lost_at_the_next_renewal, registry_env) {
  auto kept = hold("kept", 150ms);
  auto taken = hold("taken", 150ms);
  io.gone.insert("taken");
  BOOST_TEST_REQUIRE(run_until([&] { return !lost.empty(); }, 2s));
  BOOST_TEST((lost == std::vector<std::string>{"taken"}));
  BOOST_TEST((taken->status == hold_status::lost));
  BOOST_TEST((kept->status == hold_status::held));
}

BOOST_FIXTURE_TEST_CASE(lost_answers_make_a_hold_uncertain_then_lost_at_its_deadline, registry_env) {
  io.fails = true;
  auto h = hold("h", 150ms);
  BOOST_TEST_REQUIRE(run_until([&] { return h->status == hold_status::uncertain; }, 2s));
  BOOST_TEST(lost.empty());
  BOOST_TEST_REQUIRE(run_until([&] { return !lost.empty(); }, 2s));
  // Not before its deadline: the renewals kept being tried meanwhile.
  BOOST_TEST((core::clock_type::now() >= h->valid_until()));
  BOOST_TEST(io.calls.size() >= 2u);
  BOOST_TEST((std::count(events.begin(), events.end(), redisync::event_kind::hold_uncertain) == 1));
}

BOOST_FIXTURE_TEST_CASE(a_retry_that_gets_through_makes_an_uncertain_hold_held_again, registry_env) {
  io.fails = true;
  auto h = hold("h", 300ms);
  BOOST_TEST_REQUIRE(run_until([&] { return h->status == hold_status::uncertain; }, 2s));
  io.fails = false;
  BOOST_TEST_REQUIRE(run_until([&] { return h->status == hold_status::held; }, 2s));
  BOOST_TEST(run_until([&] { return leases.renewal_calls() >= 6; }, 3s));
  BOOST_TEST(lost.empty());
}

BOOST_FIXTURE_TEST_CASE(a_renewal_without_a_connection_makes_its_holds_uncertain, registry_env) {
  io.up = false;
  io.fails = true;  // and its call cannot go through
  auto h = hold("h", 300ms);
  BOOST_TEST_REQUIRE(run_until([&] { return h->status == hold_status::uncertain; }, 2s));
  BOOST_TEST((std::count(events.begin(), events.end(), redisync::event_kind::hold_uncertain) == 1));
}

BOOST_FIXTURE_TEST_CASE(a_kind_that_settles_its_own_answers_is_never_lost_nor_uncertain, registry_env) {
  beat_kind beats;
  auto h = std::make_shared<core::hold_state>();  // as client_liveness makes one: no validity check
  h->name = "alive";
  h->owner = "beat";
  h->renewal = &beats;
  h->lease = 150ms;
  h->watchdog = true;
  h->granted = true;
  leases.schedule_renewal(h, core::clock_type::now());
  io.gone.insert("beat");  // the key was gone: told, and the beat goes on
  BOOST_TEST_REQUIRE(run_until([&] { return beats.flags.size() >= 2; }, 2s));
  io.up = false;
  io.fails = true;  // no answer and no connection: told -1, and still no hold's fate
  auto const before = beats.flags.size();
  BOOST_TEST_REQUIRE(run_until([&] { return beats.flags.size() >= before + 2; }, 3s));
  BOOST_TEST((beats.flags.front() == 0));
  BOOST_TEST((beats.flags.back() == -1));
  BOOST_TEST(lost.empty());
  BOOST_TEST((h->status == hold_status::held));
  BOOST_TEST((std::count(events.begin(), events.end(), redisync::event_kind::hold_uncertain) == 0));
  leases.forget(*h);
}

BOOST_AUTO_TEST_SUITE_END()
