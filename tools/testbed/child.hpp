#pragma once

// Starting a program as a child process: for the private redis-server of tests and the demo, and
// for the `redisync stress` processes of the demo and the process tests.

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace redisync::process {

struct child_options {
  std::filesystem::path stdout_file;  // empty: /dev/null
  bool quiet_stderr = false;          // true: stderr to /dev/null as well
  std::filesystem::path stderr_file{};  // non-empty: stderr to this file
  // The child is killed when the thread that started it ends (PR_SET_PDEATHSIG), so that a
  // crashing test or demo leaves no servers or workers behind.
  bool die_with_parent = true;
};

// Starts `program` (searched in PATH unless it contains a slash) with `args`; returns its PID (never
// -1, which kill() would take for every process: a failed fork throws std::system_error). A program
// that cannot be run exits with 127. The caller reaps it.
pid_t spawn_child(std::string const& program, std::vector<std::string> const& args,
                  child_options const& options = {});

}  // namespace redisync::process
