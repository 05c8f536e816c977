#pragma once

// An application's script (redisync::script): its own copy of the source and digest, and the
// view of them that the script runner sends. The client keeps one per digest for as long as it
// lives: a call that meets NOSCRIPT needs the source, and the calls of one script wait for one
// load, found by its address.

#include "script/script.hpp"

#include <string>

namespace redisync::detail {

struct user_script {
  explicit user_script(std::string text);
  user_script(user_script const&) = delete;
  user_script& operator=(user_script const&) = delete;

  std::string source;
  std::string sha1;
  script view;  // points into source and sha1
};

}  // namespace redisync::detail
