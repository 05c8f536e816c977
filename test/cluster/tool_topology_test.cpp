// The tool's own topologies: `redisync demo --cluster` and `--sentinel` start them, show locks
// through a failover and a killed master, and exit 0 only if every check held.

#include "support/processes.hpp"

#include <boost/test/unit_test.hpp>

#include <fstream>
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

BOOST_AUTO_TEST_SUITE_END()
