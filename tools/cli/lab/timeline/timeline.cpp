// redisync timeline: an SVG picture of the histories of `redisync stress --history`, with the
// faults a test or an operator injected meanwhile and the checks the histories allow, so that a
// run can be looked at rather than read line by line. Reading is timeline_history.cpp's, the
// checks timeline_checks.cpp's, the drawing timeline_picture.cpp's.

#include "cli/common/common.hpp"
#include "cli/lab/timeline/timeline_checks.hpp"
#include "cli/lab/timeline/timeline_history.hpp"
#include "cli/lab/timeline/timeline_picture.hpp"

#include <fmt/core.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>

namespace redisync::cli {

namespace {

constexpr char const* summary =
    "redisync timeline HISTORY... -o FILE.svg [--faults FAULTS] [--title T] [--permits]\n\n"
    "Draws the histories of `redisync stress --history` (any number of files, each of any number of\n"
    "processes on one machine) as an SVG picture: one lane per process and owner, holds as bars\n"
    "(exclusive, read, permit), waits as thin lines, losses, refused writes and errors as marks,\n"
    "and under it the checks: overlaps, fencing tokens and the fenced counter.\n"
    "A hold with token 0 is drawn as a read (a read-write lock's read holds carry token 0), any other\n"
    "as exclusive; histories of --kind semaphore, permits or fair-permits need --permits. The lines\n"
    "name no lock: all holds are taken as holds of one lock (a multi-lock's members by their name).\n"
    "--faults FILE: one JSON object per line, {\"t_ns\": <CLOCK_MONOTONIC ns, the histories' clock>,\n"
    "\"fault\": \"<a short text, e.g. SIGKILL pid 1234>\"}; each is drawn as a vertical line across the\n"
    "lanes with its text.";

void write_file(std::string const& path, std::string const& text) {
  std::ofstream out{path, std::ios::trunc};
  if (!out.is_open()) throw usage_error{fmt::format("cannot write the picture '{}': {}", path, std::strerror(errno))};
  out << text;
  out.flush();
  if (!out) throw std::runtime_error{fmt::format("the picture '{}' is incomplete: {}", path, std::strerror(errno))};
}

}  // namespace

int timeline_main(std::vector<std::string> const& args) {
  std::vector<std::string> histories;
  std::string output, title;
  po::options_description options{"timeline options"};
  options.add_options()
      ("history", po::value(&histories), "a history file (also every positional argument)")
      ("output,o", po::value(&output), "the SVG file to write")
      ("faults", po::value<std::string>(), "JSON lines of faults to draw: {\"t_ns\": ..., \"fault\": \"...\"}")
      ("title", po::value(&title), "the picture's title (default: the history files)")
      ("permits", "every hold is a permit of a semaphore: drawn as such, not checked for overlaps");
  po::positional_options_description positional;
  positional.add("history", -1);
  po::variables_map vm;
  int code = 0;
  if (!parse("timeline", summary, options, positional, args, vm, code)) return code;
  if (output.empty()) throw usage_error{"-o FILE.svg is required: where to write the picture"};
  if (histories.empty()) throw usage_error{"no history file given"};
  std::optional<std::string> faults;
  if (vm.count("faults")) faults = vm["faults"].as<std::string>();
  auto const t = read_timeline(histories, faults, vm.count("permits") > 0);
  auto const checks = check_timeline(t);
  if (title.empty()) {
    title = "redisync stress: ";
    for (auto const& h : histories) title += (&h == &histories.front() ? "" : ", ") + h;
  }
  write_file(output, draw_timeline(t, checks, title));
  std::cout << fmt::format("wrote {}: {} lanes, {} holds, {} faults\n", output, t.lanes.size(), t.holds.size(),
                           t.faults.size());
  return 0;
}

}  // namespace redisync::cli
