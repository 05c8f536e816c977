#include "cli/lab/bench/bench_children.hpp"

#include "testbed/child.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include <sys/wait.h>

namespace redisync::cli::bench {

namespace {

// How a child ended, in words.
std::string how_it_ended(int status) {
  if (WIFSIGNALED(status)) return fmt::format("was killed by signal {}", WTERMSIG(status));
  return fmt::format("exited with code {}", WEXITSTATUS(status));
}

// The last line of `file` that is not empty ("" if none).
std::string last_line_of(std::filesystem::path const& file) {
  std::ifstream in{file};
  std::string last;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) last = line;
  }
  return last;
}

}  // namespace

bench_children::bench_children(std::filesystem::path dir, std::vector<std::string> const& args, std::int64_t count,
                               char const* index_variable)
    : dir_{std::move(dir)} {
  std::filesystem::create_directories(dir_);
  for (std::int64_t i = 0; i < count; ++i) {
    ::setenv(index_variable, std::to_string(i).c_str(), 1);
    auto const n = static_cast<std::size_t>(i);
    pids_.push_back(
        process::spawn_child("/proc/self/exe", args, {.stdout_file = result_file(n), .stderr_file = err_file(n)}));
  }
  ended_.resize(pids_.size());
  killed_.resize(pids_.size());
}

bench_children::~bench_children() {
  kill_unfinished();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::int64_t bench_children::reap() {
  for (std::size_t i = 0; i < pids_.size(); ++i) {
    int status = 0;
    if (!ended_[i] && !killed_[i] && ::waitpid(pids_[i], &status, WNOHANG) == pids_[i]) ended_[i] = status;
  }
  return std::count_if(ended_.begin(), ended_.end(), [](auto const& s) { return s.has_value(); });
}

void bench_children::kill_unfinished() {
  for (std::size_t i = 0; i < pids_.size(); ++i) {
    if (ended_[i] || killed_[i]) continue;
    ::kill(pids_[i], SIGKILL);
    ::waitpid(pids_[i], nullptr, 0);
    killed_[i] = true;
  }
}

bool bench_children::ended_well(std::size_t i) const {
  return ended_[i] && WIFEXITED(*ended_[i]) && WEXITSTATUS(*ended_[i]) == 0;
}

std::vector<std::string> bench_children::failures() const {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < pids_.size(); ++i) {
    if (!ended_[i] || ended_well(i)) continue;
    auto const said = last_line_of(err_file(i));
    out.push_back(fmt::format("process {} {}{}", i, how_it_ended(*ended_[i]), said.empty() ? "" : ": " + said));
  }
  return out;
}

void bench_children::forward_stderr() const {
  for (std::size_t i = 0; i < pids_.size(); ++i) {
    if (!last_line_of(err_file(i)).empty()) std::cerr << std::ifstream{err_file(i)}.rdbuf();
  }
}

std::optional<boost::json::object> bench_children::result_of(std::size_t i) const {
  std::ifstream in{result_file(i)};
  std::string line;
  if (!std::getline(in, line) || line.empty()) return std::nullopt;
  return boost::json::parse(line).as_object();
}

std::filesystem::path bench_children::result_file(std::size_t i) const { return dir_ / fmt::format("{}.json", i); }

std::filesystem::path bench_children::err_file(std::size_t i) const { return dir_ / fmt::format("{}.err", i); }

}  // namespace redisync::cli::bench
