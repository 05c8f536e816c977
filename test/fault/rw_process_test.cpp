// The read-write lock across real processes (`redisync stress --kind read|write`) and across a
// restart of Redis: readers share and no write overlaps anything, a killed reader's holds expire
// (and `inspect` shows them until then), and a restart without persistence ends every hold.

#include <redisync/redisync.hpp>

#include "support/lock_fixture.hpp"
#include "support/stress_process.hpp"

#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>

namespace asio = boost::asio;
using namespace redisync::test;
using namespace redisync::test::lock_names;

namespace {

std::int64_t summary_int(stress_process const& p, std::string const& field) {
  return p.summary().at(field).as_int64();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(rw_processes)

BOOST_AUTO_TEST_CASE(four_processes_of_readers_and_writers_share_reads_and_never_overlap_a_write) {
  redis_server redis;
  temp_dir dir;
  stress_group group;
  for (int i = 0; i < 4; ++i) {
    bool const reads = i % 2 == 0;
    std::vector<std::string> args{"--lock", "rw:mixed", "--kind", reads ? "read" : "write", "--workers", "4",
                                  "--iterations", reads ? "40" : "15", "--hold-ms", reads ? "5" : "2"};
    group.push_back(std::make_unique<stress_process>(redis.url(), args, dir.path, "p" + std::to_string(i)));
  }
  std::int64_t writes = 0, max_readers = 0;
  for (auto& p : group) {
    BOOST_TEST_REQUIRE(p->wait(120s));
    BOOST_TEST(p->exit_code() == 0);
    BOOST_TEST_REQUIRE(p->has_summary());
    BOOST_TEST(summary_int(*p, "errors") == 0);
    BOOST_TEST(summary_int(*p, "overlaps") == 0);
    BOOST_TEST(summary_int(*p, "changed_under_read") == 0);
    if (p->summary().at("kind").as_string() == "write") writes += summary_int(*p, "acquired");
    max_readers = std::max(max_readers, summary_int(*p, "max_concurrent_readers"));
  }
  BOOST_TEST(writes == 2 * 4 * 15);
  // The counter, read and written without atomicity by the writers, counts every write.
  BOOST_TEST(redis.command({"GET", "rw:mixed:counter"}).text() == std::to_string(writes));
  BOOST_TEST(max_readers > 1);  // readers of both processes held at once
  expect_nothing_left(redis, {"rw:mixed:counter", "rw:mixed:readers", "rw:mixed:writers"});
}

BOOST_AUTO_TEST_CASE(a_killed_readers_holds_expire_and_free_a_writer_within_the_lease) {
  redis_server redis;
  temp_dir dir;
  // A reader with a 1 s watchdog lease that holds for a minute: killed while it holds.
  stress_process reader{redis.url(),
                        {"--lock", "rw:killed", "--kind", "read", "--workers", "3", "--iterations", "1",
                         "--hold-ms", "60000", "--watchdog-ms", "1000"},
                        dir.path, "reader"};
  BOOST_TEST_REQUIRE(poll_until([&] { return redis.command({"HLEN", "rw:killed"}).integer() == 4; }, 20s));
  // inspect shows the mode and each reader with the time left of its level.
  child inspect{REDISYNC_TOOL_PATH, {"inspect", "--redis", redis.url(), "rw:killed", "--json"}, dir.path / "inspect.out"};
  BOOST_TEST_REQUIRE(inspect.wait(10s));
  auto const shown = inspect.lines().at(0).at("read_write").as_object();
  BOOST_TEST(shown.at("mode").as_string() == "read");
  BOOST_TEST(shown.at("writer").is_null());
  BOOST_TEST_REQUIRE(shown.at("readers").as_array().size() == 3u);
  for (auto const& r : shown.at("readers").as_array()) {
    BOOST_TEST(r.at("count").as_int64() == 1);
    BOOST_TEST(r.at("ttls_ms").as_array().at(0).as_int64() > 0);
  }
  reader.kill_hard();
  auto const killed = std::chrono::steady_clock::now();
  run_async([&](asio::io_context& ctx) -> asio::awaitable<void> {
    running_client c{ctx, fast_config(redis)};
    auto writer = c->new_owner().read_write_lock("rw:killed").write();
    auto held = co_await writer.try_acquire(10s, asio::use_awaitable);
    BOOST_TEST_REQUIRE(held.has_value());
    auto const waited = std::chrono::steady_clock::now() - killed;
    // The lease, and the watchdog's last renewal at most a third of it before the kill.
    BOOST_TEST((waited < 2s), std::chrono::duration_cast<std::chrono::milliseconds>(waited).count() << " ms");
    co_await held->release(asio::use_awaitable);
    co_await c->flush_subscriptions(asio::use_awaitable);
    co_await c.stop();
  });
  expect_nothing_left(redis, {"rw:killed:counter", "rw:killed:readers", "rw:killed:writers"});
}

// A killed writer never counted itself out: the tool's tallies in Redis stayed one up, and every
// later hold of every process reported an overlap (exit 1) while the histories showed none. The
// tool finds overlaps from the holds' validity windows now.
BOOST_AUTO_TEST_CASE(a_killed_writer_makes_no_false_overlaps_for_the_holds_after_it) {
  redis_server redis;
  temp_dir dir;
  stress_process doomed{redis.url(),
                        {"--lock", "rw:doomed", "--kind", "write", "--workers", "1", "--iterations", "1",
                         "--hold-ms", "60000", "--watchdog-ms", "1000"},
                        dir.path, "doomed"};
  // Killed once it counted itself in, as the tool does for every hold of a read-write lock.
  BOOST_TEST_REQUIRE(poll_until([&] { return redis.command({"EXISTS", "rw:doomed:writers"}).integer() == 1; }, 20s));
  doomed.kill_hard();
  stress_group group;
  for (int i = 0; i < 2; ++i) {
    bool const reads = i == 0;
    std::vector<std::string> args{"--lock", "rw:doomed", "--kind", reads ? "read" : "write", "--workers", "2",
                                  "--iterations", "10", "--hold-ms", "2"};
    group.push_back(std::make_unique<stress_process>(redis.url(), args, dir.path, "p" + std::to_string(i)));
  }
  for (auto& p : group) {
    BOOST_TEST_REQUIRE(p->wait(120s));
    BOOST_TEST_REQUIRE(p->has_summary());
    BOOST_TEST(summary_int(*p, "overlaps") == 0);
    BOOST_TEST(summary_int(*p, "errors") == 0);
    BOOST_TEST(p->exit_code() == 0);
  }
}

BOOST_AUTO_TEST_CASE(a_restart_without_persistence_ends_every_read_and_write_hold_and_the_lock_works_after) {
  lock_env env;
  env.run(
      [&](asio::io_context&, redisync::client& c) -> asio::awaitable<void> {
        auto rw = c.new_owner().read_write_lock("rw:restart");
        auto read = co_await rw.read().acquire(asio::use_awaitable);
        auto write = co_await c.new_owner().read_write_lock("rw:restart2").write().acquire(asio::use_awaitable);
        env.redis.kill_hard();
        env.redis.start();
        // The watchdog finds both fields gone at its next renewal.
        auto [ec1, ec1_how] = co_await read.wait_lost(tuple_awaitable);
        auto [ec2, ec2_how] = co_await write.wait_lost(tuple_awaitable);
        BOOST_TEST((!ec1 && ec1_how == hold_status::lost), ec1.message());
        BOOST_TEST((!ec2 && ec2_how == hold_status::lost), ec2.message());
        auto again = co_await rw.write().try_acquire(5s, asio::use_awaitable);
        BOOST_TEST_REQUIRE(again.has_value());
        co_await again->release(asio::use_awaitable);
        expect_nothing_left(env.redis);
      },
      [](redisync::config& cfg) { cfg.watchdog_lease = 600ms; });
}

BOOST_AUTO_TEST_SUITE_END()
