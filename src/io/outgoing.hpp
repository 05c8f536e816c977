#pragma once

// What the multiplexer writes for one caller: the bytes of its commands, how many replies and
// confirmation pushes they bring, and whether the layer above lets it be merged with adjacent
// calls. The multiplexer knows nothing of scripts: a `merge_hook` of the layer above writes
// merged calls, and the reply of a merged command is an array with one reply per call.

#include <redisync/resp/request.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace redisync::detail::io {

struct outgoing;

class merge_hook {
 public:
  virtual ~merge_hook() = default;
  // Appends one command that carries every call of `calls`, in order.
  virtual void write(std::string& out, std::span<outgoing const* const> calls) const = 0;
};

// Calls merge when adjacent, with the same hook, kind and slot.
struct merge_tag {
  merge_hook const* hook = nullptr;  // null: never merged
  void const* kind = nullptr;        // what the calls are (for instance, which script)
  std::uint32_t slot = 0;            // where they go (a cluster hash slot; 0 on one server)
  std::array<std::uint32_t, 4> marks{};  // the hook's notes on where the call's parts are
};

struct outgoing {
  std::string payload;
  std::size_t replies = 0;  // one per ordinary command
  std::size_t pushes = 0;   // one confirmation per channel of a (un)subscribe command
  resp::request::options opts;
  merge_tag merge;

  static outgoing from(resp::request&& req) {
    outgoing out{{}, req.expected_replies(), req.expected_pushes(), req.opts(), {}};
    out.payload = std::move(req).take_payload();
    return out;
  }
  bool empty() const noexcept { return payload.empty(); }
  bool merges_with(outgoing const& next) const noexcept {
    return merge.hook != nullptr && merge.hook == next.merge.hook && merge.kind == next.merge.kind &&
           merge.slot == next.merge.slot;
  }
};

}  // namespace redisync::detail::io
