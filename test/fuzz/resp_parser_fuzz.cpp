// libFuzzer target: the parser must never crash, hang or read out of bounds, and a message split at
// an arbitrary byte must parse to the same values as the message delivered whole.

#include <redisync/resp/parser.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

struct outcome {
  std::vector<redisync::resp::value> values;
  bool failed = false;
};

outcome parse(std::string_view input, std::size_t split) {
  redisync::resp::parser_limits limits;
  limits.max_bulk = 1u << 20;
  redisync::resp::parser p{limits};
  outcome out;
  std::string buffer;
  for (std::string_view chunk : {input.substr(0, split), input.substr(split)}) {
    buffer.append(chunk);
    for (;;) {
      boost::system::error_code ec;
      std::size_t const used = p.feed(buffer, ec);
      if (used > buffer.size()) std::abort();
      if (ec) {
        out.failed = true;
        return out;
      }
      buffer.erase(0, used);
      if (!p.has_value()) break;
      out.values.push_back(p.take_value());
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  if (size == 0) return 0;
  std::size_t const split = data[0] % size;
  std::string_view const input{reinterpret_cast<char const*>(data) + 1, size - 1};
  auto const whole = parse(input, input.size());
  auto const chunked = parse(input, std::min(split, input.size()));
  if (whole.failed != chunked.failed || whole.values != chunked.values) std::abort();
  return 0;
}
