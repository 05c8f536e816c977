#pragma once

// A write to a resource that protects itself with fencing tokens (client::fenced_set): a holder
// whose lease ran out without its knowing (a long pause, a lost renewal) may still try to write;
// the resource refuses a token lower than the highest it has accepted. Tokens of later holds are
// always higher (held::token()). Nested holds of one owner share their token, so an equal token
// is accepted. The script is src/primitives/fenced/fenced_set.lua, installed as
// share/redisync/fenced_set.lua.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace redisync {

// What client::fenced_set() takes: a write that refers to its strings, which fenced_set() copies
// before it returns. So a write braced inline in a co_await is safe on GCC 12, which destroys an
// aggregate temporary there twice (harmless only for one that owns nothing):
//   co_await c.fenced_set({.fence_key = "{o:7}:fence", .key = "{o:7}", .value = v, .token = t}, use_awaitable);
// Every member has an initializer, so that a designated initializer may leave any out (GCC 12's
// -Wextra warns of an omitted member that has none).
struct fenced_write_view {
  std::string_view fence_key{};
  std::string_view key{};
  std::string_view value{};
  std::uint64_t token = 0;
  std::optional<std::string_view> expected{};
};

// A fenced write that owns its strings, to keep in a variable.
struct fenced_write {
  std::string fence_key{};  // where the highest accepted token is kept
  std::string key{};        // the value's key; in the same cluster slot as fence_key ("{order:7}:...")
  std::string value{};
  std::uint64_t token = 0;              // the writer's held::token()
  std::optional<std::string> expected{};  // compare-and-set: written only if `key` holds this
                                          // ("" matches an absent key)

  operator fenced_write_view() const noexcept {  // NOLINT(google-explicit-constructor): by design
    return {fence_key, key, value, token, expected ? std::optional<std::string_view>{*expected} : std::nullopt};
  }
};

}  // namespace redisync
