// A RedLock's quorum without servers: majorities for N = 1 to 7, when an attempt holds, raises
// its token, is split or cannot succeed, the validity counted from each attempt's own send less the
// drift (against a fake server clock running fast), the k-th latest member deadline, and the
// delayed-restart rule.

#include "primitives/red_lock/quorum.hpp"

#include <boost/test/unit_test.hpp>

#include <ostream>

using namespace std::chrono_literals;
namespace rl = redisync::detail::red_lock;
using redisync::hold_status;
using verdict = rl::acquire_round::verdict;
using raise_verdict = rl::raise_round::verdict;

namespace redisync::detail::red_lock {
std::ostream& operator<<(std::ostream& os, acquire_round::verdict v) { return os << int(v); }
std::ostream& operator<<(std::ostream& os, raise_round::verdict v) { return os << int(v); }
}  // namespace redisync::detail::red_lock
namespace redisync {
std::ostream& operator<<(std::ostream& os, hold_status s) { return os << int(s); }
}  // namespace redisync

namespace {

auto const t0 = rl::clock_type::time_point{} + 1h;
rl::drift_allowance const drift{};

rl::acquire_round round_of(std::size_t masters, rl::clock_type::duration lease = 30s) {
  return rl::acquire_round{std::vector<bool>(masters, false), t0, lease, drift};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(red_lock_quorum)

BOOST_AUTO_TEST_CASE(a_hold_needs_a_strict_majority_of_one_to_seven_masters) {
  std::size_t const expected[] = {1, 2, 2, 3, 3, 4, 4};
  for (std::size_t n = 1; n <= 7; ++n) BOOST_TEST(rl::majority(n) == expected[n - 1], "N = " << n);
}

BOOST_AUTO_TEST_CASE(k_grants_proposing_one_token_hold_at_once_without_waiting_for_the_others) {
  auto round = round_of(5);
  round.granted(4, 17);
  round.granted(0, 17);
  BOOST_TEST(round.judge(t0 + 1ms) == verdict::undecided);
  round.granted(2, 17);
  BOOST_TEST(round.judge(t0 + 2ms) == verdict::held);
  BOOST_TEST(round.token() == 17u);
  BOOST_TEST(round.grants() == (std::vector<std::size_t>{0, 2, 4}));
  BOOST_TEST(int(round.members()[1]) == int(rl::member_state::waiting));
}

BOOST_AUTO_TEST_CASE(k_grants_proposing_different_tokens_raise_to_the_largest) {
  auto round = round_of(3);
  round.granted(0, 40);
  round.granted(1, 42);
  BOOST_TEST(round.judge(t0 + 1ms) == verdict::raise);
  BOOST_TEST(round.token() == 42u);
}

BOOST_AUTO_TEST_CASE(a_late_grant_joins_the_hold_without_changing_its_token_or_verdict) {
  auto round = round_of(3);
  round.granted(0, 9);
  round.granted(2, 9);
  round.granted(1, 50);  // after the verdict: renewed and released with the others
  BOOST_TEST(round.judge(t0 + 1ms) == verdict::held);
  BOOST_TEST(round.token() == 9u);
  BOOST_TEST(round.grants() == (std::vector<std::size_t>{0, 1, 2}));
}

BOOST_AUTO_TEST_CASE(the_validity_counts_from_the_attempts_send_less_one_percent_and_two_milliseconds) {
  auto round = round_of(3, 30s);
  BOOST_TEST((round.valid_until() == t0 + 30s - 300ms - 2ms));
  BOOST_TEST((rl::usable_lease(1ms, drift) == 0ms));  // the allowance eats a lease this short
  rl::drift_allowance const strict{0.05, 10ms};
  BOOST_TEST((rl::usable_lease(10s, strict) == 10s - 500ms - 10ms));
}

BOOST_AUTO_TEST_CASE(k_grants_that_come_in_past_the_validity_are_expired_and_undone) {
  auto round = round_of(3, 1s);
  round.granted(1, 3);
  round.granted(2, 3);
  BOOST_TEST(round.judge(round.valid_until() - 1ms) == verdict::held);
  BOOST_TEST(round.judge(round.valid_until()) == verdict::expired);
  BOOST_TEST(round.grants() == (std::vector<std::size_t>{1, 2}));
}

BOOST_AUTO_TEST_CASE(more_than_n_minus_k_refusals_split_the_attempt_and_name_the_grants_to_undo) {
  auto round = round_of(5);
  round.granted(3, 8);
  round.refused(0, 900ms);
  round.refused(1, 300ms);
  BOOST_TEST(round.judge(t0 + 1ms) == verdict::undecided);  // two may still grant
  round.refused(2, 600ms);
  BOOST_TEST(round.judge(t0 + 1ms) == verdict::split);
  BOOST_TEST(round.grants() == (std::vector<std::size_t>{3}));
  // Free now: ours and the unanswered one; one more frees when the holder's shortest field expires.
  BOOST_TEST(round.free_after().value().count() == 300);
  round.granted(4, 8);  // a late grant after the split is undone with the rest
  BOOST_TEST(round.judge(t0 + 2ms) == verdict::split);
  BOOST_TEST(round.grants() == (std::vector<std::size_t>{3, 4}));
}

BOOST_AUTO_TEST_CASE(a_split_waits_until_enough_of_the_holders_fields_expire) {
  auto round = round_of(5);
  round.granted(0, 1);
  round.refused(1, 400ms);
  round.refused(2, 100ms);
  round.refused(3, -1ms);  // a field with no expiry never frees its master
  round.refused(4, 200ms);
  BOOST_TEST(round.judge(t0 + 1ms) == verdict::split);
  BOOST_TEST(round.free_after().value().count() == 200);  // two more besides ours
  auto stuck = round_of(3);
  stuck.refused(0, -1ms);
  stuck.refused(1, -1ms);
  BOOST_TEST(stuck.free_after().value() == std::chrono::milliseconds::max());
}

BOOST_AUTO_TEST_CASE(more_than_n_minus_k_unreachable_masters_leave_no_quorum_rather_than_a_split) {
  auto round = round_of(3);
  round.granted(0, 5);
  round.unreachable(1);
  BOOST_TEST(round.judge(t0 + 1ms) == verdict::undecided);
  round.unreachable(2);
  BOOST_TEST(round.judge(t0 + 1ms) == verdict::unavailable);
  BOOST_TEST(round.grants() == (std::vector<std::size_t>{0}));
  BOOST_TEST(!round.free_after().has_value());
  auto refused_and_down = round_of(3);
  refused_and_down.refused(0, 100ms);
  refused_and_down.unreachable(1);
  BOOST_TEST(refused_and_down.judge(t0) == verdict::split);  // the holder may let go
}

BOOST_AUTO_TEST_CASE(excluded_masters_count_against_the_quorum_from_the_start) {
  rl::acquire_round one_out{{false, true, false}, t0, 30s, drift};
  BOOST_TEST(one_out.judge(t0) == verdict::undecided);
  one_out.granted(0, 2);
  one_out.granted(1, 2);  // excluded: no vote, not even a late one
  BOOST_TEST(one_out.judge(t0) == verdict::undecided);
  one_out.granted(2, 2);
  BOOST_TEST(one_out.judge(t0) == verdict::held);
  rl::acquire_round two_out{{true, true, false}, t0, 30s, drift};
  BOOST_TEST(two_out.judge(t0) == verdict::unavailable);
  rl::acquire_round none{{}, t0, 30s, drift};
  BOOST_TEST(none.judge(t0) == verdict::unavailable);
}

BOOST_AUTO_TEST_CASE(a_masters_answer_counts_once_and_an_unknown_master_not_at_all) {
  auto round = round_of(3);
  round.granted(0, 1);
  round.granted(0, 1);
  round.granted(7, 1);
  BOOST_TEST(round.judge(t0) == verdict::undecided);
  round.refused(0, 10ms);  // a later answer of the same master is ignored
  BOOST_TEST(round.grants() == (std::vector<std::size_t>{0}));
}

BOOST_AUTO_TEST_CASE(a_raise_commits_on_k_acceptances_within_the_validity) {
  rl::raise_round raise{5, std::vector<bool>(5, false), 42, t0 + 10s};
  raise.accepted(0);
  raise.accepted(3);
  BOOST_TEST(raise.judge(t0) == raise_verdict::undecided);
  raise.refused(1, 60);
  raise.accepted(4);
  BOOST_TEST(raise.judge(t0) == raise_verdict::committed);
  BOOST_TEST(raise.judge(t0 + 10s) == raise_verdict::expired);
}

BOOST_AUTO_TEST_CASE(refusals_that_leave_no_majority_raise_again_past_the_largest_counter) {
  rl::raise_round raise{3, std::vector<bool>(3, false), 42, t0 + 10s};
  raise.refused(0, 42);  // equal, but another owner recorded it
  BOOST_TEST(raise.judge(t0) == raise_verdict::undecided);
  raise.refused(2, 57);
  BOOST_TEST(raise.judge(t0) == raise_verdict::again);
  BOOST_TEST(raise.next_token() == 58u);
  rl::raise_round quiet{3, std::vector<bool>(3, false), 42, t0 + 10s};
  BOOST_TEST(quiet.next_token() == 43u);
}

BOOST_AUTO_TEST_CASE(a_raise_with_more_than_n_minus_k_masters_unreachable_fails) {
  rl::raise_round raise{3, {false, true, false}, 7, t0 + 10s};
  raise.accepted(0);
  raise.unreachable(2);
  BOOST_TEST(raise.judge(t0) == raise_verdict::failed);
}

BOOST_AUTO_TEST_CASE(a_hold_is_valid_until_the_kth_latest_member_deadline) {
  rl::member_deadlines members{5};
  auto const usable = rl::usable_lease(30s, drift);
  members.confirmed(0, t0, 30s, drift);
  members.confirmed(1, t0 + 10s, 30s, drift);
  members.confirmed(2, t0 + 20s, 30s, drift);
  BOOST_TEST((members.valid_until() == t0 + usable));  // the third latest of three
  members.confirmed(3, t0 + 15s, 30s, drift);
  BOOST_TEST((members.valid_until() == t0 + 10s + usable));
  BOOST_TEST(members.status(t0 + 20s) == hold_status::held);
}

BOOST_AUTO_TEST_CASE(renewals_kept_by_a_minority_end_the_hold_at_the_kth_deadline) {
  rl::member_deadlines members{3};
  auto const usable = rl::usable_lease(3s, drift);
  for (std::size_t m = 0; m < 3; ++m) members.confirmed(m, t0, 3s, drift);
  members.confirmed(0, t0 + 1s, 3s, drift);
  members.unanswered(1);
  members.unanswered(2);
  BOOST_TEST(members.status(t0 + 1s) == hold_status::uncertain);
  members.confirmed(0, t0 + 2s, 3s, drift);  // one master alone keeps renewing
  BOOST_TEST(members.status(t0 + usable - 1ms) == hold_status::uncertain);
  BOOST_TEST(members.status(t0 + usable) == hold_status::lost);
  BOOST_TEST((members.valid_until() == t0 + usable));
}

BOOST_AUTO_TEST_CASE(a_renewals_older_reply_never_shortens_a_newer_ones_deadline) {
  rl::member_deadlines members{1};
  members.confirmed(0, t0 + 1s, 3s, drift);
  members.confirmed(0, t0, 3s, drift);
  BOOST_TEST((members.valid_until() == t0 + 1s + rl::usable_lease(3s, drift)));
}

BOOST_AUTO_TEST_CASE(more_than_n_minus_k_masters_held_by_another_owner_lose_the_hold_at_once) {
  rl::member_deadlines members{3};
  for (std::size_t m = 0; m < 3; ++m) members.confirmed(m, t0, 30s, drift);
  members.taken(0);
  BOOST_TEST(members.status(t0 + 1s) == hold_status::held);  // two of three still renewed
  members.gone(1);
  BOOST_TEST(members.status(t0 + 1s) == hold_status::lost);  // one deadline left of the two needed
  rl::member_deadlines others{5};
  for (std::size_t m = 0; m < 5; ++m) others.confirmed(m, t0, 30s, drift);
  others.taken(0);
  others.taken(1);
  BOOST_TEST(others.status(t0) == hold_status::held);
  others.taken(2);
  BOOST_TEST(others.status(t0) == hold_status::lost);
}

// The allowance is for the masters' clocks running faster than the client's: a server 1% fast
// expires the field before the lease by the client's clock, yet after the hold's validity ends;
// 2% fast lets a second owner in while the first still counts itself valid.
BOOST_AUTO_TEST_CASE(a_fake_server_clock_one_percent_fast_leaves_no_overlap_and_two_percent_does) {
  auto const one_way = 1ms;
  auto const second_owner_granted_at = [&](rl::clock_type::duration lease, double server_rate) {
    auto const field_lives = std::chrono::duration_cast<rl::clock_type::duration>(lease / server_rate);
    return t0 + one_way + field_lives;
  };
  for (auto const lease : {rl::clock_type::duration{200ms}, rl::clock_type::duration{3s}, rl::clock_type::duration{30s}}) {
    auto round = round_of(3, lease);
    round.granted(0, 1);
    round.granted(1, 1);
    BOOST_TEST_INFO("lease " << std::chrono::duration_cast<std::chrono::milliseconds>(lease).count() << " ms");
    BOOST_TEST((round.valid_until() <= second_owner_granted_at(lease, 1.01)));
    if (lease >= 3s) BOOST_TEST((round.valid_until() > second_owner_granted_at(lease, 1.02)));
  }
}

BOOST_AUTO_TEST_CASE(a_master_up_for_less_than_the_rejoin_delay_votes_once_the_delay_has_passed) {
  rl::master_standing standing{30s};
  BOOST_TEST(!standing.votes(t0));  // never read: no vote
  standing.observed("aaaa", 10s, t0);
  BOOST_TEST(!standing.votes(t0 + 19s));
  BOOST_TEST(standing.votes(t0 + 20s));
  rl::master_standing long_up{30s};
  long_up.observed("bbbb", 3600s, t0);
  BOOST_TEST(long_up.votes(t0));
}

BOOST_AUTO_TEST_CASE(a_changed_run_id_is_a_restart_seen_now_whatever_its_uptime) {
  rl::master_standing standing{30s};
  standing.observed("aaaa", 3600s, t0);
  BOOST_TEST(standing.votes(t0));
  standing.observed("cccc", 3600s, t0 + 5s);  // a promoted replica at the address: its data may lack our holds
  BOOST_TEST(!standing.votes(t0 + 34s));
  BOOST_TEST(standing.votes(t0 + 35s));
  standing.observed("cccc", 3605s, t0 + 10s);  // read again: the exclusion stays
  BOOST_TEST(!standing.votes(t0 + 34s));
  rl::master_standing no_delay{0s};
  no_delay.observed("aaaa", 0s, t0);
  BOOST_TEST(no_delay.votes(t0));  // appendfsync always: a restart loses nothing
}

BOOST_AUTO_TEST_CASE(two_addresses_that_reach_one_server_are_one_vote) {
  BOOST_TEST(rl::second_addresses({"a", "b", "a", "", ""}) == (std::vector<bool>{false, false, true, false, false}));
}

BOOST_AUTO_TEST_SUITE_END()
