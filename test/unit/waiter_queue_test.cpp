// The wait queue's message policies: wake one, wake all, wake n (or n more), wake a named waiter, the first of
// a kind or else all, and all in front of the first of a kind; the search for a hand-off target.

#include "sync/waiter_queue.hpp"

#include <boost/test/unit_test.hpp>

#include <memory>
#include <string>
#include <vector>

using redisync::detail::sync::waiter;
using redisync::detail::sync::waiter_queue;

namespace {

struct recording_waiter final : waiter {
  explicit recording_waiter(std::string id) : id_{std::move(id)} {}
  void on_wake(bool asked) override { (asked ? asked_ : told_)++; }
  std::string_view owner() const noexcept override { return id_; }
  bool trying() const noexcept override { return trying_; }
  int asked_ = 0;  // woken to try
  int told_ = 0;   // told that it leads now
  bool trying_ = false;

 private:
  std::string id_;
};

struct four_waiters {
  std::vector<std::shared_ptr<recording_waiter>> w{std::make_shared<recording_waiter>("a"),
                                                   std::make_shared<recording_waiter>("b"),
                                                   std::make_shared<recording_waiter>("c"),
                                                   std::make_shared<recording_waiter>("d")};
  waiter_queue q;
  // `first`: the owners of the waiters that go first (a read-write lock's writers).
  explicit four_waiters(std::string_view first = "") {
    for (auto& x : w) {
      x->goes_first = first.find(x->owner()) != std::string_view::npos;
      q.push_back(x);
    }
  }
  std::vector<int> asked() const {
    std::vector<int> out;
    for (auto const& x : w) out.push_back(x->asked_);
    return out;
  }
};

// A waiter that gives up when woken, as an acquire does once its client shuts down: it leaves
// the queue, and the last one to leave destroys the queue (the client drops empty queues).
struct leaving_waiter final : waiter {
  leaving_waiter(std::unique_ptr<waiter_queue>& q, int& woken) : queue_{q}, woken_{woken} {}
  void on_wake(bool) override {
    if (!queued()) return;
    ++woken_;
    queue_->remove(*this);
    if (queue_ && queue_->empty()) queue_.reset();
  }
  std::string_view owner() const noexcept override { return "leaving"; }

 private:
  std::unique_ptr<waiter_queue>& queue_;
  int& woken_;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(wait_queue)

// A woken waiter that leaves wakes the next head, and the last one frees the queue: waking
// several must not walk the list it changes (a shutdown with waiters crashed so).
BOOST_AUTO_TEST_CASE(waiters_that_leave_when_woken_each_wake_once_and_may_drop_the_queue) {
  int woken = 0;
  auto q = std::make_unique<waiter_queue>();
  std::vector<std::shared_ptr<leaving_waiter>> w;
  for (int i = 0; i < 4; ++i) {
    w.push_back(std::make_shared<leaving_waiter>(q, woken));
    q->push_back(w.back());
  }
  q->wake_all();
  BOOST_TEST(woken == 4);
  BOOST_TEST(!q);
  for (int i = 0; i < 3; ++i) {
    if (!q) q = std::make_unique<waiter_queue>();
    q->push_back(w[static_cast<std::size_t>(i)]);
  }
  q->wake_n(2);
  BOOST_TEST(woken == 7);  // the two woken, and the third, who led once they left
  BOOST_TEST(!q);
}

BOOST_AUTO_TEST_CASE(wake_one_wakes_only_the_head) {
  four_waiters f;
  f.q.wake_one();
  BOOST_TEST((f.asked() == std::vector<int>{1, 0, 0, 0}));
}

BOOST_AUTO_TEST_CASE(wake_all_wakes_every_waiter_in_order) {
  four_waiters f;
  f.q.wake_all();
  BOOST_TEST((f.asked() == std::vector<int>{1, 1, 1, 1}));
}

BOOST_AUTO_TEST_CASE(wake_n_wakes_the_first_n) {
  four_waiters f;
  f.q.wake_n(3);
  BOOST_TEST((f.asked() == std::vector<int>{1, 1, 1, 0}));
}

// Permits freed one release after another while the first waiter's attempt is out: each release
// asks other waiters, or a permit would stay free while they sleep.
BOOST_AUTO_TEST_CASE(wake_n_more_passes_over_waiters_whose_attempt_is_out) {
  four_waiters f;
  f.w[0]->trying_ = true;
  f.q.wake_n_more(2);
  BOOST_TEST((f.asked() == std::vector<int>{0, 1, 1, 0}));
}

// With fewer asleep than permits freed, those trying are asked to try again (their attempt may
// have run before the permits were freed).
BOOST_AUTO_TEST_CASE(wake_n_more_asks_waiters_whose_attempt_is_out_when_too_few_sleep) {
  four_waiters f;
  for (std::size_t i = 0; i < 3; ++i) f.w[i]->trying_ = true;
  f.q.wake_n_more(2);
  BOOST_TEST((f.asked() == std::vector<int>{1, 0, 0, 1}));
}

BOOST_AUTO_TEST_CASE(wake_named_wakes_that_waiter_alone) {
  four_waiters f;
  f.q.wake_named("c");
  BOOST_TEST((f.asked() == std::vector<int>{0, 0, 1, 0}));
  BOOST_TEST(!f.q.passed_over);
}

// A call of a waiter of another client: if that one is dead, nobody else would look, so this
// client's first waiter is told (it looks again soon), and asked nothing.
BOOST_AUTO_TEST_CASE(a_call_of_nobody_here_tells_the_first_waiter_that_this_client_was_passed_over) {
  four_waiters f;
  f.q.wake_named("nobody");
  BOOST_TEST((f.asked() == std::vector<int>{0, 0, 0, 0}));
  BOOST_TEST(f.w[0]->told_ == 1);
  BOOST_TEST(f.q.passed_over);
  waiter_queue empty;
  empty.wake_named("nobody");
  BOOST_TEST(!empty.passed_over);
}

// What may put a sleeping waiter in front of the first of a kind again: an arrival, or a waiter
// that leaves without having been asked to try; not one that leaves after it was asked.
BOOST_AUTO_TEST_CASE(the_queue_counts_arrivals_and_departures_of_waiters_not_asked_to_try) {
  four_waiters f;
  auto const arrived = f.q.changes;
  BOOST_TEST(arrived == 4u);
  f.w[0]->woken = true;
  f.q.remove(*f.w[0]);
  BOOST_TEST(f.q.changes == arrived);
  f.q.remove(*f.w[2]);
  BOOST_TEST(f.q.changes == arrived + 1);
  f.q.push_back(f.w[2]);
  BOOST_TEST(f.q.changes == arrived + 2);
}

BOOST_AUTO_TEST_CASE(wake_first_kind_or_all_wakes_the_first_that_goes_first_or_else_every_waiter) {
  four_waiters f{"cd"};
  f.q.wake_first_kind_or_all();
  BOOST_TEST((f.asked() == std::vector<int>{0, 0, 1, 0}));
  four_waiters none;
  none.q.wake_first_kind_or_all();
  BOOST_TEST((none.asked() == std::vector<int>{1, 1, 1, 1}));
}

BOOST_AUTO_TEST_CASE(wake_until_first_kind_wakes_the_waiters_in_front_of_the_first_that_goes_first) {
  four_waiters f{"c"};
  f.q.wake_until_first_kind();
  BOOST_TEST((f.asked() == std::vector<int>{1, 1, 0, 0}));
}

BOOST_AUTO_TEST_CASE(whether_one_that_goes_first_waits_follows_arrivals_and_departures) {
  four_waiters f{"bd"};
  BOOST_TEST(f.q.first_kind_waits());
  f.q.remove(*f.w[1]);
  BOOST_TEST(f.q.first_kind_waits());
  f.q.remove(*f.w[3]);
  BOOST_TEST(!f.q.first_kind_waits());
  f.q.push_front(f.w[1]);
  BOOST_TEST(f.q.first_kind_waits());
}

BOOST_AUTO_TEST_CASE(find_named_finds_a_waiter_by_owner_and_of_two_with_one_owner_the_first_in_line) {
  four_waiters f;
  BOOST_TEST(f.q.find_named("c") == f.w[2]);
  BOOST_TEST(!f.q.find_named("e"));
  auto twin = std::make_shared<recording_waiter>("c");
  f.q.push_front(twin);
  BOOST_TEST(f.q.find_named("c") == twin);
  f.q.remove(*twin);
  BOOST_TEST(f.q.find_named("c") == f.w[2]);
  f.q.remove(*f.w[2]);
  BOOST_TEST(!f.q.find_named("c"));
}

BOOST_AUTO_TEST_CASE(a_head_that_leaves_passes_an_unused_wake_up_on_or_tells_the_next_it_leads) {
  four_waiters f;
  f.w[0]->woken = true;  // woken, then it gave up before trying
  f.q.remove(*f.w[0]);
  BOOST_TEST(f.w[1]->asked_ == 1);
  BOOST_TEST(f.q.is_head(*f.w[1]));
  f.w[1]->woken = false;
  f.q.remove(*f.w[1]);
  BOOST_TEST(f.w[2]->told_ == 1);
  BOOST_TEST(f.w[2]->asked_ == 0);
}

BOOST_AUTO_TEST_CASE(a_waiter_put_back_in_front_leads_and_the_old_head_is_told) {
  four_waiters f;
  auto back = f.w[3];
  f.q.remove(*back);
  f.q.push_front(back);
  BOOST_TEST(f.q.is_head(*back));
  BOOST_TEST(f.w[0]->told_ == 1);
}

BOOST_AUTO_TEST_CASE(a_waiter_whose_owner_is_gone_is_skipped) {
  waiter_queue q;
  auto kept = std::make_shared<recording_waiter>("kept");
  {
    auto gone = std::make_shared<recording_waiter>("gone");
    q.push_back(gone);
  }
  q.push_back(kept);
  q.wake_all();
  BOOST_TEST(kept->asked_ == 1);
  BOOST_TEST(!q.head());
}

BOOST_AUTO_TEST_CASE(a_hand_off_target_is_the_first_that_accepts_within_its_reach) {
  four_waiters f;
  auto const not_a = [](waiter const& x) { return x.owner() != "a"; };
  BOOST_TEST(f.q.first_within(1, not_a) == nullptr);  // a lock reaches the head only
  BOOST_TEST(f.q.first_within(3, not_a) == f.w[1]);   // permits pass over a waiter already trying
  auto const nobody = [](waiter const&) { return false; };
  BOOST_TEST(f.q.first_within(100, nobody) == nullptr);
}

BOOST_AUTO_TEST_SUITE_END()
