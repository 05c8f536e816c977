#pragma once

// The demo's `redisync stress` children: their summaries, once they are done.

#include <boost/json.hpp>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <sys/types.h>
#include <sys/wait.h>

namespace redisync::cli {

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
