// `redisync top` against a live stress run: without a terminal it prints one snapshot as JSON
// lines; in a terminal (a tmux pane, driven by send-keys and read by capture-pane) it shows the
// matching locks and leased permits, changes its order on a key and quits on another.

#include "testbed/redis_server.hpp"
#include "support/processes.hpp"

#include <boost/test/unit_test.hpp>

#include <fstream>
#include <iterator>
#include <set>

#include <unistd.h>

using namespace std::chrono_literals;
using redisync::process::redis_server;
using redisync::test::child;
using redisync::test::temp_dir;

namespace {

// A tmux server of this test alone (its own socket), stopped when the object goes.
class tmux_server {
 public:
  explicit tmux_server(std::filesystem::path dir) : dir_{std::move(dir)}, socket_{"redisync-top-" + std::to_string(::getpid())} {}
  ~tmux_server() { run({"kill-server"}); }
  tmux_server(tmux_server const&) = delete;
  tmux_server& operator=(tmux_server const&) = delete;

  // Runs tmux with `args`; its exit code, and its output in `out`.
  int run(std::vector<std::string> args, std::string* out = nullptr) const {
    args.insert(args.begin(), {"-L", socket_, "-f", "/dev/null"});
    child tmux{"/usr/bin/tmux", args, dir_ / "tmux.out", dir_ / "tmux.err"};
    if (!tmux.wait(10s)) return -1;
    if (out) {
      std::ifstream in{dir_ / "tmux.out"};
      *out = std::string{std::istreambuf_iterator<char>{in}, {}};
    }
    return tmux.exit_code();
  }
  std::string pane() const {
    std::string text;
    run({"capture-pane", "-p", "-t", "top"}, &text);
    return text;
  }
  // Waits until the pane shows every one of `texts`; the last capture either way.
  std::string wait_for(std::vector<std::string> const& texts, std::chrono::milliseconds limit = 15s) const {
    std::string text;
    redisync::test::poll_until(
        [&] {
          text = pane();
          return std::all_of(texts.begin(), texts.end(), [&](auto const& t) { return text.find(t) != std::string::npos; });
        },
        limit);
    return text;
  }

 private:
  std::filesystem::path dir_;
  std::string socket_;
};

bool shows(std::string const& text, std::string const& what) { return text.find(what) != std::string::npos; }

}  // namespace

BOOST_AUTO_TEST_SUITE(top_view)

BOOST_AUTO_TEST_CASE(top_shows_live_locks_in_a_terminal_sorts_on_a_key_and_quits_on_q) {
  BOOST_TEST_REQUIRE(std::filesystem::exists("/usr/bin/tmux"), "tmux is needed (scripts/install-deps.sh)");
  redis_server redis;
  temp_dir dir;
  // A contended reentrant lock and a fair lock with a queue, until the test ends.
  child plain{REDISYNC_TOOL_PATH,
              {"stress", "--redis", redis.url(), "--lock", "top:a", "--workers", "3", "--iterations", "100000000",
               "--hold-ms", "5"},
              dir.path / "a.out"};
  child fair{REDISYNC_TOOL_PATH,
             {"stress", "--redis", redis.url(), "--lock", "top:b", "--kind", "fair", "--workers", "3", "--iterations",
              "100000000", "--hold-ms", "5"},
             dir.path / "b.out"};
  // Leased permits, 2 of them for 3 workers.
  child permits{REDISYNC_TOOL_PATH,
                {"stress", "--redis", redis.url(), "--lock", "top:c", "--kind", "permits", "--permits", "2",
                 "--workers", "3", "--iterations", "100000000", "--hold-ms", "5"},
                dir.path / "c.out"};
  BOOST_TEST_REQUIRE(redisync::test::poll_until(
      [&] { return redis.command({"EXISTS", "top:a", "top:b", "top:c"}).integer() == 3; }, 15s));

  // No terminal: one snapshot as JSON lines, one per lock or permits (inspect --json's), and the
  // command ends. The permits' keys beside top:c are no rows of their own.
  child snapshot{REDISYNC_TOOL_PATH, {"top", "--redis", redis.url(), "--match", "top:*"}, dir.path / "snapshot"};
  BOOST_TEST_REQUIRE(snapshot.wait(20s));
  BOOST_TEST(snapshot.exit_code() == 0);
  std::set<std::string> names;
  for (auto const& line : snapshot.lines()) {
    names.insert(std::string{line.at("name").as_string()});
    BOOST_TEST(line.contains("holders"));
    BOOST_TEST(line.contains("fair_queue"));
    if (line.at("name") == "top:c") {
      BOOST_TEST(line.at("type") == "permits");
      BOOST_TEST(line.at("permits").as_int64() == 2);
      BOOST_TEST(line.at("permits_free").as_int64() <= 2);
    }
  }
  BOOST_TEST((names == std::set<std::string>{"top:a", "top:b", "top:c"}));

  // A terminal: the live view.
  tmux_server tmux{dir.path};
  std::string const command = std::string{REDISYNC_TOOL_PATH} + " top --redis " + redis.url() + " --match 'top:*'";
  BOOST_TEST_REQUIRE(tmux.run({"new-session", "-d", "-s", "top", "-x", "160", "-y", "30", command}) == 0);
  auto text = tmux.wait_for({"sorted by waiters", "top:a", "top:b", "top:c", "fair", "/2 free"});
  BOOST_TEST_REQUIRE(shows(text, "top:c"), text);
  BOOST_TEST(shows(text, "2 lock(s), 1 permits"), text);
  BOOST_TEST(shows(text, "/2 free"), text);
  BOOST_TEST(shows(text, "SUBS"), text);
  // 'n' sorts by name at once: top:a above top:b above top:c. (A fair lock's key is gone for a
  // moment between a release and the next grant: a frame may miss it, so one that shows all three.)
  BOOST_TEST(tmux.run({"send-keys", "-t", "top", "n"}) == 0);
  text = tmux.wait_for({"sorted by name", "top:a ", "top:b ", "top:c "});
  BOOST_TEST_REQUIRE(shows(text, "sorted by name"), text);
  BOOST_TEST(text.find("top:a ") < text.find("top:b "), text);
  BOOST_TEST(text.find("top:b ") < text.find("top:c "), text);
  // 'q' quits: the session's only program ends, and the session with it.
  BOOST_TEST(tmux.run({"send-keys", "-t", "top", "q"}) == 0);
  BOOST_TEST(redisync::test::poll_until([&] { return tmux.run({"has-session", "-t", "top"}) != 0; }, 10s));
}

BOOST_AUTO_TEST_SUITE_END()
