// The fair lock across real processes (`redisync stress --kind fair`), checked from their
// histories: service in queue order, and dead waiters passed over within 2 s.

#include "support/lock_fixture.hpp"
#include "support/stress_process.hpp"

#include <boost/test/unit_test.hpp>

#include <csignal>
#include <thread>

using namespace redisync::test;
using namespace std::chrono_literals;
using redisync::process::redis_server;

namespace {

std::int64_t queued(redis_server const& redis, std::string const& name) {
  return redis.command({"ZCARD", "redisync_fair_queue:{" + name + "}"}).integer();
}

std::int64_t t_ns(boost::json::object const& e) { return e.at("t_ns").as_int64(); }

// `count` fair-lock stress processes on `name`, each started once the one before it has its place
// in the queue: their arrival order is known. `args` are the stress options after the lock's.
stress_group queue_one_by_one(redis_server const& redis, temp_dir const& dir, std::string const& name, int count,
                              std::string const& tag, std::vector<std::string> const& args) {
  stress_group group;
  for (int i = 0; i < count; ++i) {
    std::vector<std::string> all{"--lock", name, "--kind", "fair"};
    all.insert(all.end(), args.begin(), args.end());
    group.push_back(std::make_unique<stress_process>(redis.url(), all, dir.path, tag + std::to_string(i)));
    BOOST_TEST_REQUIRE(poll_until([&] { return queued(redis, name) == i + 1; }, 10s));
  }
  return group;
}

// One wait of one worker: when its first attempt went out, and when it held the lock.
struct wait_record {
  std::int64_t waited;
  std::int64_t acquired;
};

// Every wait that ended with the lock, from the histories (a worker's events alternate).
std::vector<wait_record> waits_of(stress_group const& group) {
  std::vector<wait_record> out;
  for (auto const& p : group) {
    std::optional<std::int64_t> waited;
    for (auto const& e : p->history()) {
      auto const kind = e.at("event").as_string();
      if (kind == "wait") waited = t_ns(e);
      if (kind == "acquired" && waited) {
        out.push_back({*waited, t_ns(e)});
        waited.reset();
      }
    }
  }
  return out;
}

// Pairs served against their order: `a` queued clearly before `b` (by more than the time from
// logging a wait to its attempt reaching Redis), `b` queued while `a` waited, yet `b` held first.
int order_violations(std::vector<wait_record> const& waits) {
  constexpr std::int64_t margin_ns = 2'000'000;
  int violations = 0;
  for (auto const& a : waits) {
    for (auto const& b : waits) {
      if (a.waited + margin_ns < b.waited && b.waited < a.acquired && b.acquired < a.acquired) ++violations;
    }
  }
  return violations;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(fair_processes)

BOOST_AUTO_TEST_CASE(eight_processes_are_served_in_the_order_they_queued_for_twenty_rounds) {
  redis_server redis;
  temp_dir dir;
  // The holder keeps the lock, its watchdog renewing a lease of 500 ms, until every other process
  // has queued (a fixed hold of 3 s once ended while the seventh was starting on a busy machine:
  // the queue drained before it could be counted); then it is killed and the lease frees the lock.
  stress_process holder{
      redis.url(),
      {"--lock", "fifo", "--kind", "fair", "--iterations", "1", "--hold-ms", "60000", "--watchdog-ms", "500"},
      dir.path, "holder"};
  BOOST_TEST_REQUIRE(poll_until([&] { return !holder.events("acquired").empty(); }, 10s));
  auto group = queue_one_by_one(redis, dir, "fifo", 8, "p", {"--iterations", "20", "--hold-ms", "5"});
  // inspect shows the queue in order, every waiter alive.
  child inspect{REDISYNC_TOOL_PATH, {"inspect", "--redis", redis.url(), "fifo", "--json"}, dir.path / "inspect.out"};
  BOOST_TEST_REQUIRE(inspect.wait(10s));
  auto const shown = inspect.lines().at(0).at("fair_queue").as_array();
  BOOST_TEST(shown.size() == 8u);
  for (std::size_t i = 0; i < shown.size() && i < 8; ++i) {
    auto const& w = shown[i].as_object();
    BOOST_TEST(w.at("owner").as_string() == group[i]->events("wait").at(0).at("owner").as_string());
    BOOST_TEST(w.at("alive_for_ms").as_int64() > 0);
  }
  holder.kill_hard();
  for (auto& p : group) BOOST_TEST_REQUIRE(p->wait(60s));
  auto const waits = waits_of(group);
  BOOST_TEST(waits.size() == 160u);
  BOOST_TEST(order_violations(waits) == 0);
  // The first round follows the order in which the processes queued.
  std::vector<std::pair<std::int64_t, int>> first_holds;
  for (int i = 0; i < 8; ++i) first_holds.emplace_back(t_ns(group[i]->events("acquired").at(0)), i);
  std::sort(first_holds.begin(), first_holds.end());
  for (int i = 0; i < 8; ++i) BOOST_TEST(first_holds[i].second == i);
  for (auto& p : group) BOOST_TEST(p->summary().at("errors").as_int64() == 0);
  // Fencing: every grant's token is above the one before it.
  std::vector<std::pair<std::int64_t, std::uint64_t>> grants;
  for (auto const& p : group) {
    for (auto const& e : p->events("acquired")) grants.emplace_back(t_ns(e), e.at("token").to_number<std::uint64_t>());
  }
  std::sort(grants.begin(), grants.end());
  for (std::size_t i = 1; i < grants.size(); ++i) BOOST_TEST(grants[i].second > grants[i - 1].second);
  BOOST_TEST(redis.command({"GET", "fifo:counter"}).text() == "160");  // the killed holder wrote nothing
  expect_nothing_left(redis, {"fifo:counter"});
}

BOOST_AUTO_TEST_CASE(a_killed_waiter_at_the_head_or_in_the_middle_delays_the_queue_at_most_two_seconds) {
  redis_server redis;
  temp_dir dir;
  // The holder keeps the lock until it is killed, its watchdog renewing a lease of 500 ms (a
  // fixed lease would end while the waiters are still queueing, which takes longer on a busy machine).
  stress_process holder{
      redis.url(),
      {"--lock", "kill", "--kind", "fair", "--iterations", "1", "--hold-ms", "60000", "--watchdog-ms", "500"},
      dir.path, "holder"};
  BOOST_TEST_REQUIRE(poll_until([&] { return !holder.events("acquired").empty(); }, 10s));
  auto waiters = queue_one_by_one(redis, dir, "kill", 4, "w", {"--iterations", "1", "--hold-ms", "300"});
  // The holder and the head die at once: the lock is free when its lease ends, and the next
  // waiter takes it once the dead head is dropped.
  auto const killed_at = monotonic_ns();
  holder.kill_hard();
  waiters[0]->kill_hard();
  BOOST_TEST_REQUIRE(poll_until([&] { return !waiters[1]->events("acquired").empty(); }, 10s));
  // A waiter in the middle dies while the one before it holds the lock.
  waiters[2]->kill_hard();
  BOOST_TEST_REQUIRE(waiters[1]->wait(10s));
  BOOST_TEST_REQUIRE(waiters[3]->wait(10s));
  auto const past_head = (t_ns(waiters[1]->events("acquired").at(0)) - killed_at) / 1'000'000;
  auto const past_middle =
      (t_ns(waiters[3]->events("acquired").at(0)) - t_ns(waiters[1]->events("released").at(0))) / 1'000'000;
  BOOST_TEST_MESSAGE("held " << past_head << " ms after the holder and the head were killed (lease 500 ms); "
                             << past_middle << " ms after a release with a dead waiter next");
  BOOST_TEST(past_head <= 2000);
  BOOST_TEST(past_middle <= 2000);
  // Once the dead waiters are dropped, the queue's keys go.
  BOOST_TEST_REQUIRE(poll_until([&] { return queued(redis, "kill") == 0; }, 5s));
  expect_nothing_left(redis, {"kill:counter"});
}

BOOST_AUTO_TEST_CASE(waiters_whose_places_were_lost_queue_again_and_keep_their_new_places) {
  redis_server redis;
  temp_dir dir;
  stress_process holder{redis.url(), {"--lock", "lost", "--kind", "fair", "--iterations", "1", "--hold-ms", "6000"},
                        dir.path, "holder"};
  BOOST_TEST_REQUIRE(poll_until([&] { return !holder.events("acquired").empty(); }, 10s));
  auto waiters = queue_one_by_one(redis, dir, "lost", 2, "w", {"--iterations", "1"});
  // The queue and the clients' keys are gone (as after a restart without persistence); the
  // clients' beats find out, and their waiters queue again.
  redis.command({"DEL", "redisync_fair_queue:{lost}"});
  auto const alive_keys = redis.command({"KEYS", "redisync_alive:*"});
  for (auto const& key : alive_keys.elements()) redis.command({"DEL", std::string{key.text()}});
  BOOST_TEST_REQUIRE(poll_until([&] { return queued(redis, "lost") == 2; }, 5s));
  // Past a few liveness periods the new places are still kept.
  std::this_thread::sleep_for(3500ms);
  BOOST_TEST(queued(redis, "lost") == 2);
  BOOST_TEST_REQUIRE(holder.wait(10s));
  for (auto& w : waiters) BOOST_TEST_REQUIRE(w->wait(10s));
  expect_nothing_left(redis, {"lost:counter"});
}

BOOST_AUTO_TEST_SUITE_END()
