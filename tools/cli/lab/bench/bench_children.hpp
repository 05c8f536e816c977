#pragma once

// The child processes of one benchmark run (W6 across processes): started from this program with
// their arguments, each with its result and its stderr in a file; reaped as they end, and killed
// if they are still running when the run is over.

#include <boost/json.hpp>

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace redisync::cli::bench {

// The processes of one run, each with its result and its stderr in a file of `dir`. Those still
// running when it goes are killed, and the directory goes with it.
class bench_children {
 public:
  // Starts `count` processes of this program with `args`; `index_variable` tells each its index.
  bench_children(std::filesystem::path dir, std::vector<std::string> const& args, std::int64_t count,
                 char const* index_variable);
  ~bench_children();
  bench_children(bench_children const&) = delete;
  bench_children& operator=(bench_children const&) = delete;

  std::size_t size() const { return pids_.size(); }
  // How many have ended on their own (each one's wait status is kept).
  std::int64_t reap();
  void kill_unfinished();
  bool ended_well(std::size_t i) const;
  // Each process that ended badly on its own: how, and its last line on stderr.
  std::vector<std::string> failures() const;
  // What the processes wrote to stderr (warnings they could not write to the terminal), to ours.
  void forward_stderr() const;
  // The JSON line it wrote, if any.
  std::optional<boost::json::object> result_of(std::size_t i) const;

 private:
  std::filesystem::path result_file(std::size_t i) const;
  std::filesystem::path err_file(std::size_t i) const;

  std::filesystem::path dir_;
  std::vector<pid_t> pids_;
  std::vector<std::optional<int>> ended_;  // the wait status of each that ended on its own
  std::vector<bool> killed_;               // killed here before it ended
};

}  // namespace redisync::cli::bench
