// redisync: the command-line tool. Each subcommand lives in its own file.

#include "cli/common/common.hpp"

#include <exception>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

namespace redisync::cli {
int demo_main(std::vector<std::string> const& args);
int stress_main(std::vector<std::string> const& args);
int inspect_main(std::vector<std::string> const& args);
int bench_main(std::vector<std::string> const& args);
int top_main(std::vector<std::string> const& args);
int timeline_main(std::vector<std::string> const& args);
}  // namespace redisync::cli

namespace {

constexpr std::string_view usage =
    "usage: redisync <command> [options]   (redisync <command> --help for details)\n"
    "       redisync --version\n"
    "\n"
    "operations (a live server, read only):\n"
    "  inspect   what Redis holds for a name: holders, counts, TTL, token, waiters; permits; a latch's\n"
    "            count (--latch); an election's leader and changes (--election)\n"
    "  top       a live view of the locks matching a pattern, sorted by waiters (JSON lines without a\n"
    "            terminal)\n"
    "\n"
    "lab (load, measurements and pictures):\n"
    "  demo      a live demonstration of every primitive; starts its own redis-server without --redis\n"
    "  stress    workers in this process hammer a lock, semaphore, multi-lock, election or latch and a\n"
    "            counter; prints a JSON summary (--history: every event)\n"
    "  bench     the workloads of WORKLOADS.md (W1-W6), L1, M1, E1 and S1-S5, one JSON line\n"
    "  timeline  an SVG picture of stress histories (--history files), with faults and checks\n";

using command_main = int (*)(std::vector<std::string> const&);

// Every failure ends as one line naming its cause: 2 for a usage mistake, 1 for anything else.
int run_command(std::string const& name, command_main command, std::vector<std::string> const& args) {
  try {
    return command(args);
  } catch (redisync::cli::usage_error const& e) {
    std::cerr << "redisync " << name << ": " << e.what() << "\n";
    return 2;
  } catch (std::exception const& e) {
    std::cerr << "redisync " << name << ": " << e.what() << "\n";
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << usage;
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version" || args[0] == "version") {
    std::cout << "redisync " << REDISYNC_VERSION << "\n";
    return 0;
  }
  std::string const command = args[0];
  args.erase(args.begin());
  if (command == "demo") return run_command(command, redisync::cli::demo_main, args);
  if (command == "stress") return run_command(command, redisync::cli::stress_main, args);
  if (command == "inspect") return run_command(command, redisync::cli::inspect_main, args);
  if (command == "bench") return run_command(command, redisync::cli::bench_main, args);
  if (command == "timeline") return run_command(command, redisync::cli::timeline_main, args);
  if (command == "top") return run_command(command, redisync::cli::top_main, args);
  std::cerr << "redisync: unknown command '" << command << "'\n\n" << usage;
  return 2;
}
