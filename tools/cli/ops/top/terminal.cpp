#include "cli/ops/top/terminal.hpp"

#include <cstdio>

#include <sys/ioctl.h>
#include <unistd.h>

namespace redisync::cli {

raw_terminal::raw_terminal() {
  if (::tcgetattr(STDIN_FILENO, &saved_) != 0) return;
  termios raw = saved_;
  raw.c_lflag &= static_cast<tcflag_t>(~(ICANON | ECHO | ISIG));
  raw.c_cc[VMIN] = 1;
  raw.c_cc[VTIME] = 0;
  active_ = ::tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
  std::fputs("\x1b[?25l", stdout);
  std::fflush(stdout);
}

raw_terminal::~raw_terminal() {
  std::fputs("\x1b[?25h", stdout);
  std::fflush(stdout);
  if (active_) ::tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
}

terminal_size size_of_terminal() {
  winsize w{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) != 0 || w.ws_row == 0 || w.ws_col == 0) return {};
  return {w.ws_row, w.ws_col};
}

}  // namespace redisync::cli
