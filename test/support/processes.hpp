#pragma once

// Helpers for tests that run other programs: a scratch directory, a child process whose stdout
// is a file of JSON lines, and polling for states that have no event to await.

#include "testbed/child.hpp"
#include "testbed/monotonic.hpp"

#include <boost/json.hpp>
#include <boost/test/results_collector.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace redisync::test {

using process::monotonic_ns;

// Something to wait for that has no event to await: another process, or a server-side state.
template <class Condition>
bool poll_until(Condition done, std::chrono::milliseconds limit) {
  auto const deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  }
  return true;
}

struct temp_dir {
  std::filesystem::path path;
  temp_dir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "redisync-test-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~temp_dir() { std::filesystem::remove_all(path); }
  temp_dir(temp_dir const&) = delete;
  temp_dir& operator=(temp_dir const&) = delete;
};

// Only whole lines: a line without its newline is still being written (or its writer was killed).
inline std::vector<boost::json::object> json_lines(std::filesystem::path const& file) {
  std::vector<boost::json::object> out;
  std::ifstream in{file};
  for (std::string line; std::getline(in, line);) {
    if (in.eof()) break;
    if (!line.empty() && line.front() == '{') out.push_back(boost::json::parse(line).as_object());
  }
  return out;
}

// The last `n` lines of a text file, for a failure's message.
inline std::string tail_of(std::filesystem::path const& file, std::size_t n) {
  std::vector<std::string> lines;
  std::ifstream in{file};
  for (std::string line; std::getline(in, line);) lines.push_back(std::move(line));
  std::string out;
  for (auto i = lines.size() > n ? lines.size() - n : 0; i < lines.size(); ++i) out += lines[i] + '\n';
  return out;
}

// No check of the running test case has failed so far.
inline bool current_test_passing() {
  namespace ut = boost::unit_test;
  return ut::results_collector.results(ut::framework::current_test_case().p_id).passed();
}

// A program in its own process; stdout goes to `out` (and stderr to `err`, if given). Killed when
// the object goes away.
class child {
 public:
  child(std::string const& program, std::vector<std::string> const& args, std::filesystem::path out,
        std::filesystem::path err = {})
      : out_{std::move(out)} {
    pid_ = process::spawn_child(program, args, {.stdout_file = out_, .stderr_file = std::move(err)});
    BOOST_TEST_REQUIRE(pid_ > 0);
  }
  ~child() {
    if (pid_ > 0) kill_hard();
  }
  child(child const&) = delete;
  child& operator=(child const&) = delete;

  // A child already reaped is not signalled: kill(-1) would signal every process.
  void signal(int sig) const {
    if (pid_ > 0) ::kill(pid_, sig);
  }
  void kill_hard() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGCONT);
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  // True if it exited within `limit` (or before).
  bool wait(std::chrono::milliseconds limit) {
    if (pid_ < 0) return true;
    int status = 0;
    bool const exited = poll_until([&] { return ::waitpid(pid_, &status, WNOHANG) == pid_; }, limit);
    if (exited) reaped(status);
    return exited;
  }
  // Stops it (SIGSTOP) and returns true once it is stopped, or has exited, within `limit`: either
  // way it does nothing more until a SIGCONT. A SIGSTOP is not in effect when kill returns.
  bool stop(std::chrono::milliseconds limit) {
    if (pid_ < 0) return true;
    ::kill(pid_, SIGSTOP);
    int status = 0;
    bool const settled = poll_until([&] { return ::waitpid(pid_, &status, WNOHANG | WUNTRACED) == pid_; }, limit);
    if (settled && !WIFSTOPPED(status)) reaped(status);
    return settled;
  }
  int exit_code() const { return exit_code_; }
  std::filesystem::path const& out() const { return out_; }
  std::vector<boost::json::object> lines() const { return json_lines(out_); }

 private:
  void reaped(int status) {
    pid_ = -1;
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  std::filesystem::path out_;
  pid_t pid_ = -1;
  int exit_code_ = -1;
};

// The events of a JSON-lines log with the given "event" field.
inline std::vector<boost::json::object> events(std::vector<boost::json::object> const& lines,
                                               std::string_view kind) {
  std::vector<boost::json::object> out;
  for (auto const& e : lines) {
    if (e.at("event").as_string() == kind) out.push_back(e);
  }
  return out;
}

}  // namespace redisync::test
