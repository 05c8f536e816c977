// The `redisync` tool never aborts: every failure is one line on stderr naming its cause, with exit
// code 2 for a usage mistake and 1 for anything that went wrong at run time.

#include "testbed/redis_server.hpp"
#include "support/processes.hpp"
#include "support/tls_redis.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <fmt/core.h>

#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>

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

BOOST_AUTO_TEST_CASE(a_malformed_url_is_a_usage_error_that_names_the_part) {
  expect_one_line(run_tool({"demo", "--redis", "redis://127.0.0.1:99999"}), 2, "demo",
                  "bad Redis URL 'redis://127.0.0.1:99999': the port must be a number from 1 to 65535");
  expect_one_line(run_tool({"stress", "--redis", "bogus://x", "--lock", "l"}), 2, "stress",
                  "the scheme must be redis, rediss, redis-cluster, rediss-cluster, redis-sentinel or "
                  "rediss-sentinel, not bogus");
  expect_one_line(run_tool({"inspect", "--redis", "redis-sentinel://127.0.0.1:26379", "l"}), 2, "inspect",
                  "it names no master");
  expect_one_line(run_tool({"inspect", "--redis", "redis://", "l"}), 2, "inspect", "it names no host");
  expect_one_line(run_tool({"bench", "--redis", "redis://h/x", "--workload", "W1"}), 2, "bench",
                  "the database must be a number");
  expect_one_line(run_tool({"inspect", "--redis", "127.0.0.1:6379", "l"}), 2, "inspect", "it has no scheme");
}

BOOST_AUTO_TEST_CASE(numbers_out_of_range_and_unwritable_files_are_refused_at_start) {
  redis_server redis;
  expect_one_line(run_tool({"stress", "--redis", redis.url(), "--lock", "l", "--hold-ms", "90000000"}), 2,
                  "stress", "--hold-ms");
  expect_one_line(run_tool({"stress", "--redis", redis.url(), "--lock", "l", "--history", "/no/such/dir/h"}),
                  2, "stress", "/no/such/dir/h");
  expect_one_line(run_tool({"stress", "--redis", redis.url(), "--lock", ""}), 2, "stress", "lock name");
  expect_one_line(run_tool({"stress", "--redis", redis.url(), "--lock", "l", "--kind", "fancy"}), 2, "stress",
                  "--kind must be lock, fair, read, write, semaphore, permits, fair-permits, multi, election or latch");
  expect_one_line(run_tool({"bench", "--redis", redis.url(), "--workload", "W9"}), 2, "bench", "W9");
  ::setenv("LEASE_MS", "abc", 1);
  auto const bad_env = run_tool({"bench", "--redis", redis.url(), "--workload", "W1"});
  ::unsetenv("LEASE_MS");
  expect_one_line(bad_env, 2, "bench", "LEASE_MS=abc");
}

// Each command pointed at the wrong place ends within the connect timeout (5 s) and a margin, with
// one line naming the address and the cause.
BOOST_AUTO_TEST_CASE(every_command_pointed_at_a_closed_port_says_so_at_once) {
  auto const url = "redis://127.0.0.1:" + std::to_string(redisync::process::free_loopback_port());
  for (auto const& args : std::vector<std::vector<std::string>>{{"inspect", "--redis", url, "l"},
                                                                 {"stress", "--redis", url, "--lock", "l"},
                                                                 {"bench", "--redis", url, "--workload", "W1"},
                                                                 {"demo", "--redis", url}}) {
    expect_one_line(run_tool(args, 5s), 1, args[0], "connect: Connection refused");
  }
}

BOOST_AUTO_TEST_CASE(a_server_that_never_answers_a_wrong_password_and_tls_mismatches_are_named) {
  // A listening socket that nobody accepts from: connections complete, nothing is ever said.
  boost::asio::io_context ctx;
  boost::asio::ip::tcp::acceptor silent{ctx, {boost::asio::ip::make_address("127.0.0.1"), 0}};
  expect_one_line(run_tool({"inspect", "--redis", fmt::format("redis://127.0.0.1:{}", silent.local_endpoint().port()),
                            "l"},
                           10s),
                  1, "inspect", "handshake: no reply within 5000 ms");
  redis_server locked{redisync::process::with_args({"--requirepass", "right"})};
  expect_one_line(run_tool({"inspect", "--redis", fmt::format("redis://:wrong@127.0.0.1:{}", locked.port()), "l"}),
                  1, "inspect", "WRONGPASS");
  redisync::test::tls_redis tls;
  expect_one_line(run_tool({"inspect", "--redis", fmt::format("rediss://127.0.0.1:{}", tls.server->port()), "l"},
                           10s),
                  1, "inspect", "is it a plain port?");
  expect_one_line(run_tool({"inspect", "--redis", fmt::format("redis://127.0.0.1:{}", tls.tls_port), "l"}, 10s), 1,
                  "inspect", "rediss://");
}

// The tool could not be given a CA file or a client certificate: against a private CA or a server
// that asks for client certificates (Redis's default) it could only fail.
BOOST_AUTO_TEST_CASE(the_tool_takes_a_ca_file_and_a_client_certificate_as_flags) {
  redisync::test::tls_redis tls{true};
  std::vector<std::string> const ca{"--tls-ca-file", tls.file("ca.pem")};
  std::vector<std::string> const cert{"--tls-cert-file", tls.file("client.pem"), "--tls-key-file", tls.file("client.key")};
  auto inspect = [&](std::vector<std::string> flags) {
    std::vector<std::string> args{"inspect", "--redis", tls.url(), "l"};
    args.insert(args.end(), flags.begin(), flags.end());
    return run_tool(args, 15s);
  };
  auto all = ca;
  all.insert(all.end(), cert.begin(), cert.end());
  auto const fine = inspect(all);
  BOOST_TEST(fine.exit_code == 0);
  BOOST_TEST(fine.errors.empty());
  expect_one_line(inspect(ca), 1, "inspect", "set tls_cert_file and tls_key_file");
  expect_one_line(inspect(cert), 1, "inspect", "certificate verify failed");
  expect_one_line(run_tool({"inspect", "--redis", fmt::format("redis://127.0.0.1:{}", tls.server->port()), "l",
                            "--tls-ca-file", tls.file("ca.pem")}),
                  2, "inspect", "need a rediss:// URL");
  expect_one_line(inspect({"--tls-ca-file", "/nonexistent/ca.pem"}), 2, "inspect",
                  "tls_ca_file '/nonexistent/ca.pem' cannot be read");
}

// inspect '' said free, inspect of a hash of another kind said held, a 1 ms lease was taken (lost at
// birth), and a history written to a full disk ended with exit 0.
BOOST_AUTO_TEST_CASE(an_empty_name_a_foreign_hash_a_lease_too_short_and_a_full_disk_are_named) {
  redis_server redis;
  expect_one_line(run_tool({"inspect", "--redis", redis.url(), ""}), 2, "inspect", "lock name");
  redis.command({"HSET", "profile", "name", "ada", "age", "36"});
  redisync::test::temp_dir dir;
  redisync::test::child inspect{REDISYNC_TOOL_PATH, {"inspect", "--redis", redis.url(), "profile"}, dir.path / "out"};
  BOOST_TEST_REQUIRE(inspect.wait(10s));
  BOOST_TEST(inspect.exit_code() == 0);
  std::ifstream out{dir.path / "out"};
  std::string const text{std::istreambuf_iterator<char>{out}, {}};
  BOOST_TEST(text.find("a hash that is not a lock") != std::string::npos, text);
  BOOST_TEST(text.find("held") == std::string::npos, text);
  expect_one_line(run_tool({"stress", "--redis", redis.url(), "--lock", "l", "--lease-ms", "1"}), 2, "stress",
                  "--lease-ms");
  expect_one_line(run_tool({"stress", "--redis", redis.url(), "--lock", "l", "--iterations", "3", "--history",
                            "/dev/full"}),
                  1, "stress", "the history file '/dev/full' is incomplete: No space left on device");
}

// inspect --latch reads a latch's count and listeners, says a missing key is an open latch, and
// names a key that holds no count.
BOOST_AUTO_TEST_CASE(inspect_reads_a_latch_and_names_a_key_that_is_none) {
  redis_server redis;
  redis.command({"SET", "shards", "3"});
  redis.command({"HSET", "profile", "name", "ada"});
  redisync::test::temp_dir dir;
  auto const inspect_json = [&](std::string const& name) {
    redisync::test::child c{REDISYNC_TOOL_PATH, {"inspect", "--redis", redis.url(), name, "--latch", "--json"},
                            dir.path / (name + ".out")};
    BOOST_TEST_REQUIRE(c.wait(10s));
    BOOST_TEST(c.exit_code() == 0);
    auto const lines = c.lines();
    BOOST_TEST_REQUIRE(lines.size() == 1u);
    return lines.front();
  };
  auto const closed = inspect_json("shards");
  BOOST_TEST(closed.at("count").as_int64() == 3);
  BOOST_TEST(!closed.at("open").as_bool());
  BOOST_TEST(closed.at("subscribers").as_int64() == 0);
  auto const open = inspect_json("nothing-here");
  BOOST_TEST(open.at("count").as_int64() == 0);
  BOOST_TEST(open.at("open").as_bool());
  auto const foreign = inspect_json("profile");
  BOOST_TEST(std::string{foreign.at("error").as_string()} == "the key holds a hash that is no count");
}

// inspect --election reads who leads and the last changes of the log that stress --kind election
// wrote: nobody leads once the last leader resigned.
BOOST_AUTO_TEST_CASE(inspect_reads_an_elections_leader_and_last_changes) {
  redis_server redis;
  redisync::test::temp_dir dir;
  redisync::test::child stress{REDISYNC_TOOL_PATH,
                               {"stress", "--redis", redis.url(), "--kind", "election", "--lock", "tool-el",
                                "--iterations", "3"},
                               dir.path / "stress.out"};
  BOOST_TEST_REQUIRE(stress.wait(30s));
  BOOST_TEST(stress.exit_code() == 0);
  redisync::test::child c{REDISYNC_TOOL_PATH, {"inspect", "--redis", redis.url(), "tool-el", "--election", "--json"},
                          dir.path / "inspect.out"};
  BOOST_TEST_REQUIRE(c.wait(10s));
  BOOST_TEST(c.exit_code() == 0);
  auto const lines = c.lines();
  BOOST_TEST_REQUIRE(lines.size() == 1u);
  auto const& out = lines.front();
  BOOST_TEST(!out.contains("leader"));
  BOOST_TEST(out.at("changes_logged").as_int64() == 6);
  auto const& last = out.at("last_changes").as_array();
  BOOST_TEST_REQUIRE(last.size() == 5u);
  BOOST_TEST(std::string{last[0].at("event").as_string()} == "resigned");
  BOOST_TEST(std::string{last[1].at("event").as_string()} == "elected");
}

// --version names the version; the help lists every command and ends with a newline; JSON
// summaries write seconds in plain decimals.
BOOST_AUTO_TEST_CASE(version_help_and_json_numbers_read_as_a_user_expects) {
  redisync::test::temp_dir dir;
  auto const output_of = [&](std::vector<std::string> const& args, std::string const& file) {
    redisync::test::child c{REDISYNC_TOOL_PATH, args, dir.path / file};
    BOOST_TEST_REQUIRE(c.wait(10s));
    BOOST_TEST(c.exit_code() == 0);
    std::ifstream in{dir.path / file};
    return std::string{std::istreambuf_iterator<char>{in}, {}};
  };
  BOOST_TEST(output_of({"--version"}, "version.out").starts_with("redisync "));
  auto const help = output_of({"--help"}, "help.out");
  for (auto const* command : {"demo", "stress", "inspect", "bench", "W1-W6", "E1"}) {
    BOOST_TEST(help.find(command) != std::string::npos, command);
  }
  BOOST_TEST(help.ends_with("\n"));
  redis_server redis;
  auto const summary = output_of({"stress", "--redis", redis.url(), "--lock", "plain", "--iterations", "3"}, "s.out");
  auto const at = summary.find("\"elapsed_s\":");
  BOOST_TEST_REQUIRE(at != std::string::npos);
  auto const number = summary.substr(at + 12, summary.find_first_of(",}", at) - at - 12);
  BOOST_TEST(number.find_first_of("eE") == std::string::npos, number);
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
  // With the server's own words.
  BOOST_TEST(r.errors[0].find("(server: READONLY You can't write against a read only replica.)") != std::string::npos,
             r.errors[0]);
}

// A server that may evict lock keys is a warning the operator sees, not a failure.
BOOST_AUTO_TEST_CASE(a_server_that_may_evict_lock_keys_is_a_warning) {
  redis_server redis{redisync::process::with_args({"--maxmemory-policy", "allkeys-lru"})};
  auto const r = run_tool({"inspect", "--redis", redis.url(), "l"});
  BOOST_TEST(r.exit_code == 0);
  BOOST_TEST_REQUIRE(r.errors.size() == 1u, r.errors.size() << " lines on stderr");
  BOOST_TEST(r.errors[0].find("warning eviction possible: maxmemory-policy allkeys-lru") != std::string::npos,
             r.errors[0]);
}

// timeline draws the histories of two stress processes on one lock with a fault written by hand:
// a lane named per owner, the fault's label and the checks; a call without -o, or with a history
// it cannot read, is one line naming what is wrong.
BOOST_AUTO_TEST_CASE(timeline_draws_two_stress_histories_with_a_fault_and_the_checks) {
  redis_server redis;
  redisync::test::temp_dir dir;
  std::vector<std::string> histories;
  std::vector<std::unique_ptr<redisync::test::child>> stress;
  for (auto const* tag : {"a", "b"}) {
    histories.push_back((dir.path / fmt::format("{}.history", tag)).string());
    stress.push_back(std::make_unique<redisync::test::child>(
        REDISYNC_TOOL_PATH,
        std::vector<std::string>{"stress", "--redis", redis.url(), "--lock", "drawn", "--fence-key", "drawn:fence",
                                 "--iterations", "5", "--hold-ms", "2", "--history", histories.back()},
        dir.path / fmt::format("{}.out", tag)));
  }
  auto const fault_at = redisync::test::monotonic_ns();
  for (auto& s : stress) {
    BOOST_TEST_REQUIRE(s->wait(30s));
    BOOST_TEST_REQUIRE(s->exit_code() == 0);
  }
  auto const faults = dir.path / "faults";
  std::ofstream{faults} << fmt::format(R"({{"t_ns": {}, "fault": "SIGSTOP pid 4242 <by hand>"}})", fault_at) << "\n";
  auto const svg = (dir.path / "timeline.svg").string();
  redisync::test::child timeline{REDISYNC_TOOL_PATH,
                                 {"timeline", histories[0], histories[1], "-o", svg, "--faults", faults.string()},
                                 dir.path / "timeline.out"};
  BOOST_TEST_REQUIRE(timeline.wait(20s));
  BOOST_TEST(timeline.exit_code() == 0);
  std::ifstream said{dir.path / "timeline.out"};
  std::string const line{std::istreambuf_iterator<char>{said}, {}};
  BOOST_TEST(line.find(fmt::format("wrote {}: 2 lanes, 10 holds, 1 faults", svg)) != std::string::npos, line);
  std::ifstream in{svg};
  std::string const picture{std::istreambuf_iterator<char>{in}, {}};
  BOOST_TEST(picture.starts_with("<?xml"));
  BOOST_TEST(picture.ends_with("</svg>\n"));
  std::set<std::pair<std::int64_t, std::string>> owners;
  for (auto const& h : histories) {
    for (auto const& e : redisync::test::json_lines(h)) {
      owners.insert({e.at("pid").as_int64(), std::string{e.at("owner").as_string()}});
    }
  }
  BOOST_TEST_REQUIRE(owners.size() == 2u);
  for (auto const& [pid, owner] : owners) {
    BOOST_TEST(picture.find(fmt::format("pid {} {}</text>", pid, owner)) != std::string::npos, owner);
  }
  BOOST_TEST(picture.find(">SIGSTOP pid 4242 &lt;by hand&gt;</text>") != std::string::npos);
  BOOST_TEST(picture.find("overlaps: 0 ") != std::string::npos);
  BOOST_TEST(picture.find("tokens: 0 falls in 10 exclusive holds") != std::string::npos);
  BOOST_TEST(picture.find("counter: 10 accepted writes, highest value 10: values 1..10 each written once") !=
             std::string::npos);
  expect_one_line(run_tool({"timeline", histories[0]}), 2, "timeline", "-o FILE.svg is required");
  expect_one_line(run_tool({"timeline", "/no/such/run.history", "-o", svg}), 2, "timeline",
                  "cannot read the history file '/no/such/run.history': No such file or directory");
}

BOOST_AUTO_TEST_SUITE_END()
