// The `redisync` tool never aborts: every failure is one line on stderr naming its cause, with exit
// code 2 for a usage mistake and 1 for anything that went wrong at run time.

#include "process/redis_server.hpp"
#include "support/processes.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <fstream>

using namespace std::chrono_literals;
using redisync::process::redis_server;

namespace {

struct tool_result {
  int exit_code = -1;
  std::vector<std::string> errors;  // stderr, line by line
};

tool_result run_tool(std::vector<std::string> const& args, std::chrono::milliseconds limit = 20s) {
  redisync::test::temp_dir dir;
  redisync::test::child tool{REDISYNC_TOOL_PATH, args, dir.path / "out", dir.path / "err"};
  BOOST_TEST_REQUIRE(tool.wait(limit), "redisync " << args.front() << " did not end in time");
  tool_result out{tool.exit_code(), {}};
  std::ifstream err{dir.path / "err"};
  for (std::string line; std::getline(err, line);) out.errors.push_back(line);
  return out;
}

// Exit `code` and a single line that names the command and contains `cause`.
void expect_one_line(tool_result const& r, int code, std::string const& command, std::string const& cause) {
  BOOST_TEST(r.exit_code == code);
  BOOST_TEST_REQUIRE(r.errors.size() == 1u, r.errors.size() << " lines on stderr");
  BOOST_TEST(r.errors[0].starts_with("redisync " + command + ": "), r.errors[0]);
  BOOST_TEST(r.errors[0].find(cause) != std::string::npos, r.errors[0]);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(tool)

BOOST_AUTO_TEST_CASE(a_malformed_url_is_a_usage_error_in_every_command) {
  expect_one_line(run_tool({"demo", "--redis", "redis://127.0.0.1:99999"}), 2, "demo", "bad Redis URL");
  expect_one_line(run_tool({"stress", "--redis", "bogus://x", "--lock", "l"}), 2, "stress", "bad Redis URL");
  expect_one_line(run_tool({"inspect", "--redis", "redis://", "l"}), 2, "inspect", "bad Redis URL");
  expect_one_line(run_tool({"bench", "--redis", "redis://h:x", "--workload", "W1"}), 2, "bench",
                  "bad Redis URL");
}

BOOST_AUTO_TEST_CASE(numbers_out_of_range_and_unwritable_files_are_refused_at_start) {
  redis_server redis;
  expect_one_line(run_tool({"stress", "--redis", redis.url(), "--lock", "l", "--hold-ms", "90000000"}), 2,
                  "stress", "--hold-ms");
  expect_one_line(run_tool({"stress", "--redis", redis.url(), "--lock", "l", "--history", "/no/such/dir/h"}),
                  2, "stress", "/no/such/dir/h");
  expect_one_line(run_tool({"stress", "--redis", redis.url(), "--lock", ""}), 2, "stress", "lock name");
  expect_one_line(run_tool({"bench", "--redis", redis.url(), "--workload", "W9"}), 2, "bench", "W9");
  ::setenv("LEASE_MS", "abc", 1);
  auto const bad_env = run_tool({"bench", "--redis", redis.url(), "--workload", "W1"});
  ::unsetenv("LEASE_MS");
  expect_one_line(bad_env, 2, "bench", "LEASE_MS=abc");
}

BOOST_AUTO_TEST_CASE(a_database_the_server_refuses_ends_the_demo_with_the_cause) {
  redis_server redis;
  expect_one_line(run_tool({"demo", "--redis", redis.url() + "/99"}), 1, "demo", "handshake");
}

BOOST_AUTO_TEST_CASE(stress_prints_the_first_error_of_each_kind_with_its_cause) {
  redis_server master;
  redis_server replica{redisync::process::replica_of(master.port())};
  auto const r = run_tool({"stress", "--redis", replica.url(), "--lock", "l", "--workers", "2",
                           "--iterations", "5"});
  BOOST_TEST(r.exit_code == 1);
  // Ten refused acquires, one line.
  BOOST_TEST_REQUIRE(r.errors.size() == 1u);
  BOOST_TEST(r.errors[0].find("acquire failed: the server is a read-only replica") != std::string::npos,
             r.errors[0]);
}

BOOST_AUTO_TEST_SUITE_END()
