#pragma once

// The picture of the demo's fault sections: the histories of their stress children, this
// process's own holds (logged as a stress worker logs its own), and the signals it sent, drawn as
// `redisync timeline` draws them. The histories go when it goes; the picture stays.

#include "cli/lab/stress/stress.hpp"

#include <redisync/held.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

namespace redisync::cli {

class demo_timeline {
 public:
  demo_timeline();
  ~demo_timeline();
  demo_timeline(demo_timeline const&) = delete;
  demo_timeline& operator=(demo_timeline const&) = delete;

  // A fresh history file for a child's --history.
  std::string child_history(std::string_view tag);
  // Sends `sig` (named `name`) to `pid`, logged with the time read just before.
  void signal(pid_t pid, int sig, std::string_view name);
  // This process's own events, for its lanes.
  void waits(std::string_view owner) { own_.write("wait", owner, 0); }
  void acquired(std::string_view owner, held const& h);
  void releasing(std::string_view owner, held const& h);
  void released(std::string_view owner, std::uint64_t token) { own_.write("released", owner, token); }
  void wrote(std::string_view owner, std::uint64_t token, bool accepted) {
    own_.write(accepted ? "write_accepted" : "write_rejected", owner, token);
  }
  // Draws what was logged so far; the picture's path, or why there is none.
  std::string draw(std::string const& title);

 private:
  std::vector<std::string> histories_;  // this process's first
  history_log own_;
  std::ofstream faults_;
};

}  // namespace redisync::cli
