#pragma once

// The demo's `redisync stress` children: starting them, their files, and their summaries once
// they are done.

#include "testbed/child.hpp"
#include "testbed/stress_client.hpp"

#include <boost/json.hpp>
#include <fmt/core.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace redisync::cli {

// A file of this demo run in the temporary directory: `redisync-demo-<pid>-<what>`.
inline std::filesystem::path temp_file(std::string const& what) {
  return std::filesystem::temp_directory_path() / fmt::format("redisync-demo-{}-{}", ::getpid(), what);
}

// Starts `redisync stress ARGS` against `url` (this same binary); its summary goes to `out`, and
// its events to `history` if given.
inline pid_t spawn_stress(std::string const& url, std::vector<std::string> args, std::filesystem::path const& out,
                          std::optional<std::filesystem::path> const& history = {}) {
  return process::spawn_child("/proc/self/exe", testbed::stress_command(url, std::move(args), history),
                              {.stdout_file = out});
}

// Waits for the child `pid` and reads the JSON summary it printed to `out` (then removed); nothing
// if it failed, or printed no summary.
inline std::optional<boost::json::object> stress_summary(pid_t pid, std::filesystem::path const& out) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::ifstream in{out};
  std::string line;
  std::getline(in, line);
  in.close();
  std::filesystem::remove(out);
  boost::system::error_code ec;
  auto parsed = boost::json::parse(line, ec);
  if (ec || !parsed.is_object() || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return std::move(parsed.as_object());
}

}  // namespace redisync::cli
