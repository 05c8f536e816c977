#pragma once

// `redisync stress` in its own process (its JSON summary in a file, its events in a history), and
// the checks every fault test makes from the histories of several of them.

#include "process/redis_server.hpp"
#include "support/processes.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace redisync::test {

class stress_process {
 public:
  stress_process(std::string const& url, std::vector<std::string> args, std::filesystem::path dir,
                 std::string const& tag)
      : history_{dir / (tag + ".history")},
        process_{REDISYNC_TOOL_PATH, with_common(url, std::move(args), history_), dir / (tag + ".out")} {}

  void signal(int sig) const { process_.signal(sig); }
  void kill_hard() { process_.kill_hard(); }
  bool wait(std::chrono::milliseconds limit) { return process_.wait(limit); }
  int exit_code() const { return process_.exit_code(); }
  boost::json::object summary() const { return process_.lines().at(0); }
  std::vector<boost::json::object> history() const { return json_lines(history_); }
  std::vector<boost::json::object> events(std::string_view kind) const {
    return redisync::test::events(history(), kind);
  }

 private:
  static std::vector<std::string> with_common(std::string const& url, std::vector<std::string> args,
                                              std::filesystem::path const& history) {
    args.insert(args.begin(), {"stress", "--redis", url, "--history", history.string()});
    return args;
  }

  std::filesystem::path history_;
  child process_;
};

using stress_group = std::vector<std::unique_ptr<stress_process>>;

// `count` processes running `redisync stress` with `args`, tagged p0, p1, ...
inline stress_group start_stress(std::string const& url, std::vector<std::string> const& args,
                                 std::filesystem::path const& dir, int count) {
  stress_group out;
  for (int i = 0; i < count; ++i) {
    out.push_back(std::make_unique<stress_process>(url, args, dir, fmt::format("p{}", i)));
  }
  return out;
}

// What the histories of a group say, once every process has exited.
struct stress_outcome {
  std::int64_t acquired = 0, released = 0, lost = 0, accepted = 0, rejected = 0, errors = 0;
  std::int64_t unknown = 0;  // fenced writes whose outcome a lost connection hid
};

// Checks that every process exited (no crash: exit code 0 or 1) within `limit`, that every hold
// ended exactly once (`released` or `lost`, same owner and token), and that the fencing tokens of
// fresh holds strictly increase in the order they were granted. Returns the counts.
inline stress_outcome check_stress_group(stress_group& group, std::chrono::milliseconds limit) {
  stress_outcome out;
  struct grant {
    std::int64_t t_ns;
    std::uint64_t token;
  };
  std::vector<grant> grants;
  for (auto& p : group) {
    BOOST_TEST_REQUIRE(p->wait(limit), "a stress process did not finish within its bound");
    BOOST_TEST((p->exit_code() == 0 || p->exit_code() == 1), "exit code " << p->exit_code());
    std::map<std::pair<std::string, std::uint64_t>, int> open;  // holds not ended yet
    for (auto const& e : p->history()) {
      std::string const kind{e.at("event").as_string()};
      auto const key = std::pair{std::string{e.at("owner").as_string()},
                                 e.at("token").to_number<std::uint64_t>()};
      if (kind == "acquired") {
        ++out.acquired;
        ++open[key];
        grants.push_back({e.at("t_ns").as_int64(), key.second});
      } else if (kind == "released" || kind == "lost") {
        ++(kind == "released" ? out.released : out.lost);
        BOOST_TEST(open[key] == 1, "a hold ended without being acquired, or twice: " << kind);
        --open[key];
      }
    }
    for (auto const& [key, n] : open) BOOST_TEST(n == 0, "a hold never ended: " << key.first);
    auto const s = p->summary();
    out.accepted += s.at("accepted").as_int64();
    out.rejected += s.at("rejected").as_int64();
    out.unknown += s.at("unknown").as_int64();
    out.errors += s.at("errors").as_int64();
  }
  std::sort(grants.begin(), grants.end(), [](auto const& a, auto const& b) { return a.t_ns < b.t_ns; });
  for (std::size_t i = 1; i < grants.size(); ++i) {
    BOOST_TEST(grants[i].token > grants[i - 1].token,
               "token " << grants[i].token << " after " << grants[i - 1].token);
  }
  BOOST_TEST(out.acquired == out.released + out.lost);
  return out;
}

}  // namespace redisync::test
