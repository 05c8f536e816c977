#include "cli/lab/demo/demo_timeline.hpp"

#include "cli/lab/demo/demo_children.hpp"
#include "cli/lab/timeline/timeline_checks.hpp"
#include "cli/lab/timeline/timeline_history.hpp"
#include "cli/lab/timeline/timeline_picture.hpp"
#include "testbed/monotonic.hpp"

#include <fmt/core.h>

#include <csignal>

#include <unistd.h>

namespace redisync::cli {

demo_timeline::demo_timeline()
    : histories_{temp_file("own.history").string()}, own_{histories_.front()}, faults_{temp_file("faults").string()} {}

demo_timeline::~demo_timeline() {
  std::error_code ignored;
  for (auto const& h : histories_) std::filesystem::remove(h, ignored);
  std::filesystem::remove(temp_file("faults"), ignored);
}

std::string demo_timeline::child_history(std::string_view tag) {
  histories_.push_back(temp_file(fmt::format("{}.history", tag)).string());
  std::filesystem::remove(histories_.back());
  return histories_.back();
}

void demo_timeline::signal(pid_t pid, int sig, std::string_view name) {
  faults_ << fmt::format(R"({{"t_ns":{},"fault":"{} pid {}"}})", process::monotonic_ns(), name, pid) << std::endl;
  ::kill(pid, sig);
}

void demo_timeline::acquired(std::string_view owner, held const& h) {
  own_.write("acquired", owner, h.token(), {{"valid_until_ns", process::monotonic_ns(h.valid_until())}});
}

void demo_timeline::releasing(std::string_view owner, held const& h) {
  own_.write("releasing", owner, h.token(), {{"valid_until_ns", process::monotonic_ns(h.valid_until())}});
}

std::string demo_timeline::draw(std::string const& title) {
  try {
    auto const t = read_timeline(histories_, temp_file("faults").string(), false);
    auto const picture = std::filesystem::temp_directory_path() / fmt::format("redisync-demo-{}.svg", ::getpid());
    std::ofstream out{picture};
    out << draw_timeline(t, check_timeline(t), title);
    if (!out.flush()) return fmt::format("none (cannot write {})", picture.string());
    return picture.string();
  } catch (std::exception const& e) {
    return fmt::format("none ({})", e.what());
  }
}

}  // namespace redisync::cli
