#pragma once

// A Lua script of the application, run by client::eval with EVALSHA. Its SHA1 is computed once,
// here. A server that lacks the script gets it with one SCRIPT LOAD however many calls meet
// NOSCRIPT at once, and again in the handshake after every reconnect, so calls are never sent
// with the whole source each time. Cheap to copy; keep one per script, for example a static.

#include <memory>
#include <string>

namespace redisync {

namespace detail {
struct user_script;
}

class script {
 public:
  explicit script(std::string source);

  std::string const& source() const noexcept;
  std::string const& sha1() const noexcept;  // lowercase hex, as SCRIPT LOAD answers

 private:
  friend class client;
  std::shared_ptr<detail::user_script const> impl_;
};

}  // namespace redisync
