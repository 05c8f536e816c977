#pragma once

// The terminal of a live view (redisync top): keys read one at a time without echo, and its size.

#include <cstddef>

#include <termios.h>

namespace redisync::cli {

// Puts stdin in raw mode (no line buffering, no echo) and hides the cursor while it lives; restores
// both when it goes, however the view ended.
class raw_terminal {
 public:
  raw_terminal();
  ~raw_terminal();
  raw_terminal(raw_terminal const&) = delete;
  raw_terminal& operator=(raw_terminal const&) = delete;

 private:
  termios saved_{};
  bool active_ = false;
};

struct terminal_size {
  std::size_t rows = 24;
  std::size_t columns = 80;
};
// The size of the terminal on stdout, or 24x80 if it does not say.
terminal_size size_of_terminal();

}  // namespace redisync::cli
