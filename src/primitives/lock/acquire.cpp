#include "primitives/lock/acquire.hpp"

#include <scripts.hpp>

#include <array>

namespace redisync::detail::reentrant_lock {

script const& reentrant_acquire::attempt_script() const { return scripts::lock_calls; }

io::outgoing reentrant_acquire::attempt(bool retry, bool by_digest) {
  std::string const lease = std::to_string(this->lease().count());
  std::string const token_key = lock_protocol::token_key_of(args().name);
  std::array<std::string_view, 2> const keys{args().name, token_key};
  bool const keep = core()->cfg().persistent_fencing_counter;
  std::string const before = count_argument(retry);
  if (before.empty()) {
    std::array<std::string_view, 3> const argv{keep ? "acquire+" : "acquire", args().owner, lease};
    return script_call(scripts::lock_calls, args().slot, keys, argv, by_digest);
  }
  std::array<std::string_view, 4> const argv{keep ? "retry-acquire+" : "retry-acquire", args().owner, lease, before};
  return script_call(scripts::lock_calls, args().slot, keys, argv, by_digest);
}

}  // namespace redisync::detail::reentrant_lock
