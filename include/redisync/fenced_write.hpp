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

namespace redisync {

// Every member has an initializer, so that a designated initializer may leave any out (GCC 12's
// -Wextra warns of an omitted member that has none).
struct fenced_write {
  std::string fence_key{};  // where the highest accepted token is kept
  std::string key{};        // the value's key; in the same cluster slot as fence_key ("{order:7}:...")
  std::string value{};
  std::uint64_t token = 0;              // the writer's held::token()
  std::optional<std::string> expected{};  // compare-and-set: written only if `key` holds this
                                          // ("" matches an absent key)
};

}  // namespace redisync
