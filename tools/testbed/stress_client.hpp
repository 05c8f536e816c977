#pragma once

// `redisync stress` as a child process of a test or of the tool's demo: its command line, the
// same for both (the tests check the histories it writes with testbed/history_checks.hpp).

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace redisync::testbed {

// The arguments of `redisync stress ARGS` against `url`, with its events to `history` if given.
inline std::vector<std::string> stress_command(std::string const& url, std::vector<std::string> args,
                                               std::optional<std::filesystem::path> const& history = {}) {
  args.insert(args.begin(), {"stress", "--redis", url});
  if (history) args.insert(args.end(), {"--history", history->string()});
  return args;
}

}  // namespace redisync::testbed
