// The releases kept for a failover, without a server: which ones a change of master makes again
// (those within the window and their lease, whose slot has another master now), and how many are
// kept at most.

#include "sync/release_journal.hpp"

#include <boost/test/unit_test.hpp>

using namespace std::chrono_literals;
namespace core = redisync::detail::sync;

namespace {

std::shared_ptr<core::hold_state> hold_of(std::string name, std::chrono::milliseconds lease, std::uint32_t slot = 0) {
  auto h = std::make_shared<core::hold_state>();
  h->name = std::move(name);
  h->lease = lease;
  h->slot = slot;
  return h;
}

std::vector<std::string> names(std::vector<core::release_journal::recorded> const& holds) {
  std::vector<std::string> out;
  for (auto const& h : holds) out.push_back(h.hold->name);
  return out;
}

auto const every_slot_moved = [](redisync::detail::routing::slot_type, redisync::detail::routing::node_id) { return true; };

}  // namespace

BOOST_AUTO_TEST_SUITE(release_journal)

BOOST_AUTO_TEST_CASE(a_change_of_master_makes_again_the_releases_of_the_window_within_their_lease) {
  core::release_journal journal{10s};
  auto const t0 = core::clock_type::time_point{} + 1h;
  journal.record(hold_of("old", 30s), t0, 0);
  journal.record(hold_of("short-lease", 2s), t0 + 5s, 0);
  journal.record(hold_of("recent", 30s), t0 + 9s, 0);
  // At t0 + 12 s: "old" is past the window, "short-lease" past its lease (its key expired anyway).
  BOOST_TEST(names(journal.recent(t0 + 12s, every_slot_moved)) == (std::vector<std::string>{"recent"}));
  BOOST_TEST(journal.size() == 2u);  // what is past the window is forgotten
}

BOOST_AUTO_TEST_CASE(only_releases_whose_slot_has_another_master_now_are_made_again) {
  core::release_journal journal{10s};
  auto const t0 = core::clock_type::time_point{} + 1h;
  journal.record(hold_of("stayed", 30s, 1), t0, 7);
  journal.record(hold_of("moved", 30s, 2), t0, 7);
  auto const moved = [](redisync::detail::routing::slot_type slot, redisync::detail::routing::node_id node) {
    return slot == 2 && node == 7;  // slot 2 is served by another node than 7 now
  };
  BOOST_TEST(names(journal.recent(t0 + 1s, moved)) == (std::vector<std::string>{"moved"}));
}

// A hold lost because the new master lacked it is released at the next change of master (a
// failover back to the master that granted it), and says so.
BOOST_AUTO_TEST_CASE(a_hold_lost_to_a_new_master_is_released_at_the_next_change_with_its_reason) {
  core::release_journal journal{10s};
  auto const t0 = core::clock_type::time_point{} + 1h;
  journal.record(hold_of("released", 30s), t0, 0);
  journal.record(hold_of("lost", 30s), t0 + 1s, 0, core::release_journal::lost_to_a_new_master);
  auto const made_again = journal.recent(t0 + 2s, every_slot_moved);
  BOOST_TEST_REQUIRE(made_again.size() == 2u);
  BOOST_TEST(made_again[0].why == core::release_journal::released_then_demoted);
  BOOST_TEST(made_again[1].hold->name == "lost");
  BOOST_TEST(made_again[1].why == core::release_journal::lost_to_a_new_master);
}

BOOST_AUTO_TEST_CASE(the_journal_keeps_the_latest_entries_and_none_with_a_window_of_zero) {
  core::release_journal journal{10s};
  auto const t0 = core::clock_type::time_point{} + 1h;
  for (std::size_t i = 0; i < core::release_journal::max_entries + 10; ++i) journal.record(hold_of("n", 30s), t0, 0);
  BOOST_TEST(journal.size() == core::release_journal::max_entries);

  core::release_journal off{0ms};
  off.record(hold_of("n", 30s), t0, 0);
  BOOST_TEST(off.size() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
