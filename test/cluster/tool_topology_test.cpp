// The tool's own topologies: `redisync demo --cluster` and `--sentinel` start them, show locks
// through a failover and a killed master, and exit 0 only if every check held. And the tool on a
// cluster of the test's: `top` finds the locks of every master.

#include "testbed/redis_cluster.hpp"
#include "support/cluster_names.hpp"
#include "support/processes.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <memory>
#include <set>
#include <sstream>

using namespace std::chrono_literals;

namespace {

// Runs the tool to its end; its exit code and its standard output.
std::pair<int, std::string> run_tool(std::vector<std::string> const& args, std::chrono::milliseconds limit) {
  redisync::test::temp_dir dir;
  redisync::test::child tool{REDISYNC_TOOL_PATH, args, dir.path / "out", dir.path / "err"};
  BOOST_TEST_REQUIRE(tool.wait(limit), "redisync " << args.front() << " did not end in time");
  std::ifstream out{dir.path / "out"};
  std::stringstream text;
  text << out.rdbuf();
  if (tool.exit_code() != 0) BOOST_TEST_MESSAGE(text.str() << redisync::test::tail_of(dir.path / "err", 20));
  return {tool.exit_code(), text.str()};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(tool_topologies, *boost::unit_test::label("cluster"))

BOOST_AUTO_TEST_CASE(demo_cluster_shows_locks_through_a_failover_and_a_killed_master) {
  auto const [code, out] = run_tool({"demo", "--cluster"}, 120s);
  BOOST_TEST(code == 0);
  BOOST_TEST(out.find("every safety check held") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(demo_sentinel_shows_locks_through_a_failover_and_a_killed_master) {
  auto const [code, out] = run_tool({"demo", "--sentinel"}, 120s);
  BOOST_TEST(code == 0);
  BOOST_TEST(out.find("every safety check held") != std::string::npos);
}

// A cluster client sends SCAN to one node: `top` must walk every master to find locks whose names
// live on different ones. Each lock is held for a minute by a `stress` process of its own.
BOOST_AUTO_TEST_CASE(top_on_a_cluster_shows_the_locks_of_every_master) {
  redisync::process::redis_cluster cluster;
  redisync::test::temp_dir dir;
  auto const masters = cluster.masters();
  BOOST_TEST_REQUIRE(masters.size() == 3u);
  std::set<std::string> held;
  std::vector<std::unique_ptr<redisync::test::child>> holders;
  for (auto const master : masters) {
    auto const name = redisync::test::name_on(cluster, master, "top-spread-");
    held.insert(name);
    holders.push_back(std::make_unique<redisync::test::child>(
        REDISYNC_TOOL_PATH,
        std::vector<std::string>{"stress", "--redis", cluster.url(), "--lock", name, "--iterations", "1", "--hold-ms",
                                 "60000"},
        dir.path / (name + ".out"), dir.path / (name + ".err")));
    BOOST_TEST_REQUIRE(redisync::test::poll_until(
                           [&] { return cluster.node(master).command({"EXISTS", name}).integer() == 1; }, 20s),
                       name << " is not held on the master at port " << cluster.node(master).port()
                            << redisync::test::tail_of(dir.path / (name + ".err"), 20));
  }

  // Without a terminal, top prints one snapshot as JSON lines and ends.
  auto const [code, out] = run_tool({"top", "--redis", cluster.url(), "--match", "top-spread-*"}, 30s);
  BOOST_TEST_REQUIRE(code == 0);
  std::set<std::string> shown;
  std::istringstream lines{out};
  for (std::string line; std::getline(lines, line);) {
    shown.insert(std::string{boost::json::parse(line).as_object().at("name").as_string()});
  }
  BOOST_TEST((shown == held), out);
}

BOOST_AUTO_TEST_SUITE_END()
