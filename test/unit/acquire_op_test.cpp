// The acquire loop as one state machine, without a socket: a fake host with a fake clock, and a
// scripted primitive whose replies the tests choose. The same machine serves the fast path (one
// attempt, granted) and the slow path (queue, subscription, alarm, retries).

#include "support/fake_wait_host.hpp"

#include <boost/test/unit_test.hpp>

using namespace std::chrono_literals;
using boost::system::error_code;
using redisync::error;
using redisync::test::fake_wait_host;
namespace core = redisync::detail::sync;
namespace io = redisync::detail::io;

namespace {

redisync::detail::script const test_script{"test", "sha", "return 1", false};

// Replies the tests send: `granted`, `busy(ms)`, `unreadable`; an error code stands for itself.
io::response granted() { return {redisync::resp::value::make_integer(0)}; }
io::response busy(std::int64_t ms) { return {redisync::resp::value::make_integer(ms)}; }
io::response unreadable() { return {redisync::resp::value{redisync::resp::type::simple_string, "?"}}; }

class scripted_acquire final : public core::acquire_op {
 public:
  using acquire_op::acquire_op;

  std::optional<error_code> result;
  bool held = false;
  std::vector<bool> retries;  // per attempt: sent in its idempotent form
  int undone = 0;
  int late_undone = 0;  // replies of attempts whose caller was gone
  bool hold_undo = false;             // keep an undo running until the test ends it
  std::function<void()> pending_undo;
  bool server_queue = false;  // a waiter of a lock that keeps its order on the server (a writer, a fair lock)
  bool counts_permits = false;  // a waiter of a semaphore: a message says how many permits are free

 private:
  bool queues_on_server() const override { return server_queue; }
  bool queues_before_trying() const override { return server_queue; }
  error_code check_arguments() const override { return {}; }
  bool prepare() override { return false; }
  redisync::detail::script const& attempt_script() const override { return test_script; }
  core::message_policy policy() const override {
    if (counts_permits) return core::wake_as_many_as_freed;
    return [](core::waiter_queue& q, std::string_view) { q.wake_one(); };
  }
  io::outgoing attempt(bool retry, bool) override {
    retries.push_back(retry);
    return {};
  }
  void undo_late_grant(error_code, io::response const&, std::function<void()> then) override {
    ++late_undone;
    then();
  }
  outcome read(error_code ec, io::response& replies) override {
    if (ec == error::ambiguous) return {outcome_kind::unknown};
    if (ec) return {outcome_kind::failed, ec};
    if (replies.at(0).kind() != redisync::resp::type::integer) return {outcome_kind::unreadable};
    auto const v = replies.at(0).integer();
    if (v == 0) return {outcome_kind::granted};
    return {outcome_kind::busy, {}, std::chrono::milliseconds{v}};
  }
  void undo(std::function<void()> then) override {
    ++undone;
    if (hold_undo) {
      pending_undo = std::move(then);
      return;
    }
    then();
  }
  void complete(error_code ec, bool h) override {
    result = ec;
    held = h;
  }
};

struct fixture {
  std::shared_ptr<fake_wait_host> host = std::make_shared<fake_wait_host>();
  bool permits = false;  // the ops started wait for semaphore permits
  ~fixture() { host->drop_pending(); }

  std::shared_ptr<scripted_acquire> start(std::optional<std::chrono::milliseconds> wait = std::nullopt,
                                          std::string owner = "owner-1", bool cancellable = true,
                                          bool server_queue = false, bool spin = false) {
    core::acquire_op::params p{.name = "lock", .owner = owner, .channel = "channel",
                               .slot = 0,
                               .deadline = wait ? std::optional{host->clock + *wait} : std::nullopt,
                               .once = wait && wait->count() == 0,
                               .spin = spin};
    auto op = std::make_shared<scripted_acquire>(host, std::move(p));
    if (cancellable) op->enable_attempt_cancellation();
    op->server_queue = server_queue;
    op->counts_permits = permits;
    op->start();
    return op;
  }

  // A waiter of a server-ordered lock that a release of this client chose for a hand-off while it
  // subscribed: it sends nothing of its own meanwhile.
  std::shared_ptr<scripted_acquire> chosen_for_handoff_while_subscribing() {
    auto op = start(std::nullopt, "owner-1", true, true);
    host->reply({}, busy(500));
    BOOST_TEST_REQUIRE(op->can_take_handoff());
    op->handoff_pending = true;
    host->confirm_subscriptions();
    BOOST_TEST_REQUIRE(host->unanswered() == 0u);
    return op;
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(acquire_loop)

BOOST_AUTO_TEST_CASE(the_fast_path_is_one_attempt_completed_from_its_reply) {
  fixture f;
  auto op = f.start();
  BOOST_TEST(f.host->attempts.size() == 1u);
  f.host->reply({}, granted());
  BOOST_TEST_REQUIRE(op->result.has_value());
  BOOST_TEST(!*op->result);
  BOOST_TEST(op->held);
  BOOST_TEST(f.host->confirmations.empty());  // no subscription
  BOOST_TEST(!f.host->next_alarm().has_value());
  BOOST_TEST(f.host->queues.empty());
}

BOOST_AUTO_TEST_CASE(a_busy_lock_is_waited_for_with_a_subscription_and_the_servers_bound) {
  fixture f;
  auto op = f.start();
  f.host->reply({}, busy(500));
  BOOST_TEST(f.host->waiters == 1);
  BOOST_TEST(f.host->subscribed["channel"] == 1);
  BOOST_TEST(f.host->unanswered() == 0u);
  // Subscribed, it tries again: a release between the busy reply and the subscription is not missed.
  f.host->confirm_subscriptions();
  BOOST_TEST(f.host->unanswered() == 1u);
  f.host->reply({}, busy(500));
  // Then it sleeps until the holder's lease would end at the latest.
  BOOST_TEST_REQUIRE(f.host->next_alarm().has_value());
  BOOST_TEST((*f.host->next_alarm() == f.host->clock + 500ms));
  f.host->advance_to(f.host->clock + 500ms);
  BOOST_TEST(f.host->unanswered() == 1u);
  f.host->reply({}, granted());
  BOOST_TEST(op->held);
  BOOST_TEST(f.host->waiters == 0);
  BOOST_TEST(f.host->subscribed["channel"] == 0);
  BOOST_TEST(f.host->queues.empty());
}

BOOST_AUTO_TEST_CASE(a_spinning_waiter_never_subscribes_and_looks_again_sooner_and_sooner_less_often) {
  fixture f;
  auto op = f.start(std::nullopt, "owner-1", true, false, true);
  f.host->reply({}, busy(60'000));  // a lease far away: only the spin brings it back
  BOOST_TEST(f.host->waiters == 1);
  BOOST_TEST(f.host->subscribed["channel"] == 0);
  std::vector<std::chrono::microseconds> waits;
  for (int i = 0; i < 10; ++i) {
    BOOST_TEST_REQUIRE(f.host->next_alarm().has_value());
    waits.push_back(std::chrono::duration_cast<std::chrono::microseconds>(*f.host->next_alarm() - f.host->clock));
    f.host->advance_to(*f.host->next_alarm());
    BOOST_TEST_REQUIRE(f.host->unanswered() == 1u);
    f.host->reply({}, busy(60'000));
  }
  // 1 ms doubling to 128 ms, each cut by at most half.
  for (std::size_t i = 0; i < waits.size(); ++i) {
    auto const full = std::min(core::spin_backoff::first * (1 << i), core::spin_backoff::longest);
    BOOST_TEST_INFO("look " << i << ": " << waits[i].count() << " us");
    BOOST_TEST((waits[i] <= full && waits[i] >= full / 2));
  }
  BOOST_TEST(f.host->subscribed["channel"] == 0);
  f.host->advance_to(*f.host->next_alarm());
  f.host->reply({}, granted());
  BOOST_TEST(op->held);
  BOOST_TEST(f.host->waiters == 0);
  BOOST_TEST(f.host->subscribed["channel"] == 0);
}

BOOST_AUTO_TEST_CASE(a_message_wakes_the_first_waiter_at_once_and_only_it) {
  fixture f;
  auto first = f.start(std::nullopt, "a");
  f.host->reply({}, busy(10000));
  f.host->confirm_subscriptions();
  f.host->reply({}, busy(10000));
  // A second waiter arrives behind the first: it does not try, it queues (no barging).
  auto second = f.start(std::nullopt, "b");
  BOOST_TEST(f.host->unanswered() == 0u);
  f.host->confirm_subscriptions();
  BOOST_TEST(f.host->unanswered() == 0u);  // not the head: it sleeps
  f.host->queues["channel"].wake_one();
  BOOST_TEST(f.host->unanswered() == 1u);  // the first tries, the second sleeps on
  f.host->reply({}, granted());
  BOOST_TEST(first->held);
  BOOST_TEST(!second->result.has_value());
  BOOST_TEST(f.host->queues["channel"].is_head(*second));
}

// Leased permits freed by separate releases (a message each) while the first waiter's attempt is
// out: each message asks another waiter. Asking the first again lost permits: they stayed free
// while waiters slept, and W4 ran on two of its four permits.
BOOST_AUTO_TEST_CASE(each_permit_freed_while_the_first_waiter_tries_asks_another_waiter) {
  fixture f;
  f.permits = true;
  std::vector<std::shared_ptr<scripted_acquire>> waiters;
  for (std::string owner : {"a", "b", "c"}) {
    waiters.push_back(f.start(std::nullopt, owner));
    if (waiters.size() == 1) f.host->reply({}, busy(10000));
    f.host->confirm_subscriptions();
    if (waiters.size() == 1) f.host->reply({}, busy(10000));
  }
  BOOST_TEST_REQUIRE(f.host->unanswered() == 0u);  // all three sleep
  for (std::size_t freed = 1; freed <= 3; ++freed) {
    f.host->queues["channel"].deliver("1");
    BOOST_TEST(f.host->unanswered() == freed);
  }
  for (int i = 0; i < 3; ++i) f.host->reply({}, granted());
  for (auto const& w : waiters) BOOST_TEST(w->held);
}

// A wake-up that comes while the first attempt is in flight (the release that frees the lock ran in
// the same script call behind it, so its message comes before the busy reply) is not lost when the
// channel's subscription, already there for another waiter, is confirmed within the call.
BOOST_AUTO_TEST_CASE(a_server_queued_waiter_woken_during_its_first_attempt_tries_again_at_once) {
  fixture f;
  f.host->confirm_at_once = true;
  auto other = f.start(std::nullopt, "reader");
  f.host->reply({}, busy(10000));
  f.host->confirm_subscriptions();
  f.host->reply({}, busy(10000));
  auto writer = f.start(std::nullopt, "writer", true, true);
  BOOST_TEST_REQUIRE(f.host->unanswered() == 1u);
  f.host->queues["channel"].wake_named("writer");
  f.host->reply({}, busy(333));
  BOOST_TEST(f.host->unanswered() == 1u);  // not asleep until its bound
  f.host->reply({}, granted());
  BOOST_TEST(writer->held);
  BOOST_TEST(!other->result.has_value());
}

// The queue of a channel goes when its last waiter leaves, policy and all: every waiter that joins
// sets it again, or messages on the channel would wake nobody.
// A release of this client that chose it for a hand-off while it subscribed is bringing it the
// lock: an attempt of its own would take a second level (the random shutdown test found one).
BOOST_AUTO_TEST_CASE(a_waiter_chosen_for_a_handoff_while_it_subscribes_waits_for_it_instead_of_trying) {
  fixture f;
  auto op = f.chosen_for_handoff_while_subscribing();
  op->handed_over();
  BOOST_TEST(op->held);
}

// A hand-off whose release was answered after the waiter's lease would have run out (the server
// stalled) is not taken as it came: the attempt's idempotent form confirms it, renewing the lease.
BOOST_AUTO_TEST_CASE(a_handoff_too_late_to_count_is_confirmed_by_an_idempotent_attempt) {
  fixture f;
  auto op = f.chosen_for_handoff_while_subscribing();
  op->confirm_grant();
  BOOST_TEST(!op->held);
  BOOST_TEST_REQUIRE(f.host->unanswered() == 1u);
  f.host->reply({}, granted());
  BOOST_TEST(op->held);
  BOOST_TEST((op->retries == std::vector<bool>{false, true}));
}

BOOST_AUTO_TEST_CASE(an_attempt_answered_after_the_lock_was_handed_over_is_undone_not_dropped) {
  fixture f;
  auto op = f.start();
  BOOST_TEST_REQUIRE(f.host->unanswered() == 1u);
  op->handed_over();
  BOOST_TEST(op->held);
  f.host->reply({}, granted());
  BOOST_TEST(op->late_undone == 1);
  BOOST_TEST(!f.host->keys.contains(core::hold_key("owner-1", "lock")));  // settled again once undone
}

BOOST_AUTO_TEST_CASE(every_waiter_that_joins_sets_the_channels_message_policy) {
  fixture f;
  auto first = f.start(std::nullopt, "a");
  f.host->reply({}, busy(10000));
  first->cancel(boost::asio::cancellation_type::terminal);
  BOOST_TEST(f.host->queues.empty());
  auto second = f.start(std::nullopt, "b");
  f.host->reply({}, busy(10000));
  BOOST_TEST_REQUIRE(f.host->queues.count("channel") == 1u);
  BOOST_TEST(f.host->queues["channel"].policy != nullptr);
}

BOOST_AUTO_TEST_CASE(an_unknown_outcome_is_tried_again_in_its_idempotent_form) {
  fixture f;
  auto op = f.start();
  f.host->reply(error::ambiguous);
  f.host->reply({}, granted());
  BOOST_TEST(op->held);
  BOOST_TEST((op->retries == std::vector<bool>{false, true}));
}

BOOST_AUTO_TEST_CASE(an_unknown_outcome_settled_by_its_retry_is_reported_as_resolved) {
  fixture f;
  auto op = f.start();
  f.host->reply(error::ambiguous);
  f.host->reply({}, busy(100));
  BOOST_TEST((f.host->events == std::vector<redisync::event_kind>{redisync::event_kind::outcome_resolved}));
}

// A retry that fails (no connection within its bound, say) leaves the first attempt's outcome
// unknown: it is undone, and the owner's next acquire of the name waits until that is done.
BOOST_AUTO_TEST_CASE(an_unknown_outcome_whose_retry_fails_is_undone_and_the_key_waits_for_it) {
  fixture f;
  auto op = f.start();
  op->hold_undo = true;
  f.host->reply(error::ambiguous);
  f.host->reply(error::not_connected);
  BOOST_TEST((op->result == error::not_connected));
  BOOST_TEST(op->undone == 1);
  BOOST_TEST(f.host->keys.contains(core::hold_key("owner-1", "lock")));
  auto next = f.start();
  BOOST_TEST(f.host->unanswered() == 0u);  // waits for the undo
  op->pending_undo();
  BOOST_TEST(f.host->unanswered() == 1u);
  f.host->reply({}, granted());
  BOOST_TEST(next->held);
}

BOOST_AUTO_TEST_CASE(an_unreadable_reply_is_undone_before_the_error_is_reported) {
  fixture f;
  auto op = f.start();
  f.host->reply({}, unreadable());
  BOOST_TEST(op->undone == 1);
  BOOST_TEST((op->result == error::unexpected_reply));
}

BOOST_AUTO_TEST_CASE(a_bounded_wait_tries_once_more_at_its_deadline_and_ends_without_the_lock) {
  fixture f;
  auto op = f.start(300ms);
  f.host->reply({}, busy(10000));
  f.host->confirm_subscriptions();
  f.host->reply({}, busy(10000));
  BOOST_TEST((*f.host->next_alarm() == f.host->clock + 300ms));
  f.host->advance_to(f.host->clock + 300ms);
  f.host->reply({}, busy(10000));
  BOOST_TEST_REQUIRE(op->result.has_value());
  BOOST_TEST(!*op->result);
  BOOST_TEST(!op->held);
  BOOST_TEST(f.host->waiters == 0);
}

// TRYAGAIN (a migration), LOADING...: the attempt did not run; it goes again after a pause that
// grows, within the caller's wait, and the last refusal at the deadline is the caller's error.
BOOST_AUTO_TEST_CASE(an_attempt_refused_for_now_goes_again_within_the_wait_and_its_refusal_ends_it) {
  fixture f;
  auto op = f.start(300ms);
  f.host->reply(error::try_again, {});
  BOOST_TEST_REQUIRE(!op->result.has_value());
  BOOST_TEST((*f.host->next_alarm() == f.host->clock + 10ms));
  f.host->advance_to(f.host->clock + 10ms);
  f.host->reply(error::try_again, {});
  BOOST_TEST((*f.host->next_alarm() == f.host->clock + 20ms));  // the pause grows
  f.host->advance_to(f.host->clock + 20ms);
  f.host->reply({}, granted());
  BOOST_TEST_REQUIRE(op->result.has_value());
  BOOST_TEST(op->held);
  BOOST_TEST(op->retries == (std::vector<bool>{false, false, false}));  // it never ran: no retry form

  auto bounded = f.start(25ms);
  for (int i = 0; i < 3 && !bounded->result; ++i) {
    f.host->reply(error::try_again, {});
    if (auto const at = f.host->next_alarm(); at && !bounded->result) f.host->advance_to(*at);
  }
  BOOST_TEST_REQUIRE(bounded->result.has_value());
  BOOST_TEST((*bounded->result == error::try_again));
  BOOST_TEST(!bounded->held);
}

BOOST_AUTO_TEST_CASE(a_refusal_that_will_not_pass_fails_the_acquire_at_once) {
  fixture f;
  auto op = f.start();
  f.host->reply(error::read_only, {});  // a replica behind a plain URL
  BOOST_TEST_REQUIRE(op->result.has_value());
  BOOST_TEST((*op->result == error::read_only));
}

BOOST_AUTO_TEST_CASE(a_wait_of_zero_is_one_attempt_that_never_queues) {
  fixture f;
  auto op = f.start(0ms);
  f.host->reply({}, busy(500));
  BOOST_TEST(op->result.has_value());
  BOOST_TEST(f.host->confirmations.empty());
}

BOOST_AUTO_TEST_CASE(a_subscription_that_never_comes_ends_a_bounded_wait_at_its_deadline) {
  fixture f;
  auto op = f.start(200ms);
  f.host->reply({}, busy(10000));
  f.host->advance_to(f.host->clock + 200ms);
  BOOST_TEST_REQUIRE(op->result.has_value());
  BOOST_TEST(!op->held);
  f.host->confirm_subscriptions();  // late: the reference it took is dropped
  BOOST_TEST(f.host->subscribed["channel"] == 0);
}

BOOST_AUTO_TEST_CASE(cancelling_a_sleeping_acquire_leaves_the_queue_and_the_channel) {
  fixture f;
  auto op = f.start();
  f.host->reply({}, busy(10000));
  f.host->confirm_subscriptions();
  f.host->reply({}, busy(10000));
  op->cancel(boost::asio::cancellation_type::terminal);
  BOOST_TEST((op->result == boost::asio::error::operation_aborted));
  BOOST_TEST(f.host->waiters == 0);
  BOOST_TEST(f.host->subscribed["channel"] == 0);
  BOOST_TEST(!f.host->next_alarm().has_value());
}

BOOST_AUTO_TEST_CASE(cancelling_an_attempt_in_flight_cancels_the_request_and_leaves_the_key_unsettled) {
  fixture f;
  auto op = f.start();
  op->cancel(boost::asio::cancellation_type::terminal);
  BOOST_TEST((f.host->attempts[0].cancelled == boost::asio::cancellation_type::terminal));
  // The connection abandons the written request: the caller learns at once, the late reply decides.
  f.host->reply(boost::asio::error::operation_aborted);
  BOOST_TEST((op->result == boost::asio::error::operation_aborted));
  BOOST_TEST(f.host->keys.contains(core::hold_key("owner-1", "lock")));
  // A new acquire of the same owner and name waits until the late outcome is resolved.
  auto again = f.start();
  BOOST_TEST(f.host->attempts.size() == 1u);
  f.host->attempts[0].late({}, granted());
  BOOST_TEST(!f.host->keys.contains(core::hold_key("owner-1", "lock")));
  BOOST_TEST(f.host->attempts.size() == 2u);
}

BOOST_AUTO_TEST_CASE(a_script_missing_on_the_server_is_loaded_and_the_same_attempt_sent_again) {
  fixture f;
  auto op = f.start();
  f.host->reply({}, {redisync::resp::value{redisync::resp::type::simple_error, "NOSCRIPT No matching script"}});
  BOOST_TEST_REQUIRE(f.host->loads.size() == 1u);
  BOOST_TEST(f.host->unanswered() == 0u);
  f.host->loads[0]({});
  f.host->reply({}, granted());
  BOOST_TEST(op->held);
}

BOOST_AUTO_TEST_CASE(a_stopped_client_fails_the_acquire_with_not_connected) {
  fixture f;
  f.host->is_stopped = true;
  auto op = f.start();
  BOOST_TEST((op->result == error::not_connected));
  BOOST_TEST(f.host->attempts.empty());
}

BOOST_AUTO_TEST_CASE(a_busy_reply_handled_after_the_client_stopped_ends_the_wait_at_once) {
  fixture f;
  auto op = f.start();
  f.host->is_stopped = true;  // stop() came while the attempt's reply was on its way
  f.host->reply({}, busy(30000));
  f.host->confirm_subscriptions(error::not_connected);
  BOOST_TEST((op->result == error::not_connected));
  BOOST_TEST(f.host->waiters == 0);
}

BOOST_AUTO_TEST_SUITE_END()
