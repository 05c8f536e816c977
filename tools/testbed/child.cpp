#include "testbed/child.hpp"

#include <cerrno>
#include <csignal>
#include <system_error>

#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

namespace redisync::process {

pid_t spawn_child(std::string const& program, std::vector<std::string> const& args,
                  child_options const& options) {
  // Everything the child needs is prepared before fork: after it only async-signal-safe calls.
  std::vector<std::string> storage{program};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::string const out = options.stdout_file.empty() ? "/dev/null" : options.stdout_file.string();
  std::string const err = options.stderr_file.string();
  pid_t const parent = ::getpid();

  pid_t const pid = ::fork();
  if (pid < 0) throw std::system_error{errno, std::generic_category(), "fork"};
  if (pid != 0) return pid;
  if (options.die_with_parent) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);  // the parent ended before prctl took effect
  }
  int const null = ::open("/dev/null", O_RDWR);
  int const out_fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ::dup2(null, 0);
  ::dup2(out_fd, 1);
  if (!err.empty()) {
    ::dup2(::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), 2);
  } else if (options.quiet_stderr) {
    ::dup2(null, 2);
  }
  ::execvp(argv[0], argv.data());
  ::_exit(127);
}

}  // namespace redisync::process
