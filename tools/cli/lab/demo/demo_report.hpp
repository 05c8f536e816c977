#pragma once

// What a demo says as it goes (with the time since it began) and the checks it made, printed as a
// table at the end.

#include <fmt/core.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace redisync::cli {

class demo_report {
 public:
  template <class... Args>
  void say(fmt::format_string<Args...> f, Args&&... args) {
    auto const t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    fmt::print("[{:6.2f}s] {}\n", t, fmt::format(f, std::forward<Args>(args)...));
    std::fflush(stdout);
  }

  void record(std::string name, bool passed, std::string detail) {
    say("{}: {} ({})", name, passed ? "ok" : "FAILED", detail);
    checks_.push_back({std::move(name), passed, std::move(detail)});
  }

  // The table of checks; 0 if every one held, else 1.
  int summary() const {
    fmt::print("\n{:<44} {:<6} {}\n", "check", "result", "detail");
    fmt::print("{:-<44} {:-<6} {:-<40}\n", "", "", "");
    bool all = true;
    for (auto const& c : checks_) {
      fmt::print("{:<44} {:<6} {}\n", c.name, c.passed ? "ok" : "FAILED", c.detail);
      all = all && c.passed;
    }
    fmt::print("\n{}\n", all ? "every safety check held" : "SOME CHECKS FAILED");
    return all ? 0 : 1;
  }

 private:
  struct check {
    std::string name;
    bool passed;
    std::string detail;
  };
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::vector<check> checks_;
};

}  // namespace redisync::cli
