#pragma once

// The Redisson-protocol clients of the interop tests (test/interop/*.mjs, run by node with the
// modules scripts/test.sh installs into build/interop) and the JSON events they print.

#include "support/processes.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace redisync::test {

// The arguments of `node` for test/interop/`script` with `args`; such a client needs ioredis.
inline std::vector<std::string> interop_peer(std::string_view script, std::vector<std::string> args) {
  char const* modules = std::getenv("REDISSON_NODE_MODULES");
  BOOST_TEST_REQUIRE((modules != nullptr && std::filesystem::exists(std::string{modules} + "/ioredis")),
                     "ioredis is missing: scripts/test.sh installs it into build/interop");
  args.insert(args.begin(), REDISYNC_SOURCE_DIR "/test/interop/" + std::string{script});
  return args;
}

inline bool has_event(child const& peer, std::string_view kind) { return !events(peer.lines(), kind).empty(); }

inline boost::json::object only_event(child const& peer, std::string_view kind) {
  auto const found = events(peer.lines(), kind);
  BOOST_TEST_REQUIRE(found.size() == 1u, "no single '" << kind << "' event from the Redisson client");
  return found[0];
}

inline std::int64_t t_ns_of(boost::json::object const& e) { return std::stoll(std::string{e.at("t_ns").as_string()}); }

inline std::int64_t ms_between(std::int64_t from_ns, std::int64_t to_ns) { return (to_ns - from_ns) / 1'000'000; }

}  // namespace redisync::test
