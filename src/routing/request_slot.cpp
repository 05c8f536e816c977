#include "routing/request_slot.hpp"

#include <redisync/resp/parser.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace redisync::detail::routing {

namespace {

enum class keys { none, first, all, every_other, numkeys };

bool same(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](char x, char y) { return std::toupper(static_cast<unsigned char>(x)) == y; });
}

keys keys_of(std::string_view command) {
  static constexpr std::array<std::string_view, 27> keyless{"PUBSUB",
      "PING", "ECHO", "INFO", "TIME", "CLUSTER", "CONFIG", "DBSIZE", "SCRIPT", "FLUSHALL", "FLUSHDB",
      "CLIENT", "COMMAND", "HELLO", "AUTH", "SELECT", "WAIT", "MULTI", "EXEC", "DISCARD", "SCAN",
      "KEYS", "RANDOMKEY", "ROLE", "LASTSAVE", "SLOWLOG", "LATENCY"};
  static constexpr std::array<std::string_view, 14> all_keys{
      "DEL", "UNLINK", "EXISTS", "MGET", "TOUCH", "WATCH", "SINTER", "SUNION", "SDIFF", "PFCOUNT",
      "PFMERGE", "SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"};
  for (auto const c : keyless) {
    if (same(command, c)) return keys::none;
  }
  for (auto const c : all_keys) {
    if (same(command, c)) return keys::all;
  }
  if (same(command, "MSET") || same(command, "MSETNX")) return keys::every_other;
  if (same(command, "EVAL") || same(command, "EVALSHA") || same(command, "EVAL_RO") ||
      same(command, "EVALSHA_RO") || same(command, "FCALL") || same(command, "FCALL_RO")) {
    return keys::numkeys;
  }
  return keys::first;
}

}  // namespace

request_slot slot_of_request(router const& r, std::string_view payload) {
  request_slot out;
  resp::parser parser;
  auto note = [&](std::string_view key) {
    auto const slot = r.slot_of(key);
    if (out.slot && *out.slot != slot) out.ec = error::cross_slot;
    out.slot = slot;
  };
  while (!payload.empty() && out.ec == error{}) {
    boost::system::error_code ec;
    payload.remove_prefix(parser.feed(payload, ec));
    if (ec || !parser.has_value()) break;
    auto const command = parser.take_value();
    auto const args = command.elements();
    if (args.empty() || !args[0].is_string()) continue;
    switch (keys_of(args[0].text())) {
      case keys::none: break;
      case keys::first:
        if (args.size() > 1) note(args[1].text());
        break;
      case keys::all:
        for (std::size_t i = 1; i < args.size(); ++i) note(args[i].text());
        break;
      case keys::every_other:
        for (std::size_t i = 1; i < args.size(); i += 2) note(args[i].text());
        break;
      case keys::numkeys: {
        std::int64_t n = 0;
        if (args.size() < 3 || !args[2].as_integer(n) || n < 0) break;
        for (std::size_t i = 3; i < args.size() && i < 3 + static_cast<std::size_t>(n); ++i) note(args[i].text());
        break;
      }
    }
  }
  return out;
}

}  // namespace redisync::detail::routing
