#include "address.hpp"

#include <charconv>

namespace redisync::detail {

std::optional<std::uint16_t> parse_port(std::string_view text) {
  unsigned v = 0;
  auto const [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || v == 0 || v > 65535) return std::nullopt;
  return static_cast<std::uint16_t>(v);
}

std::optional<node_address> parse_host_port(std::string_view text, std::string_view host_if_empty) {
  auto const colon = text.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto const port = parse_port(text.substr(colon + 1));
  if (!port) return std::nullopt;
  std::string_view host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return node_address{std::string{host.empty() ? host_if_empty : host}, *port};
}

std::string address_text(node_address const& at) {
  bool const ipv6 = at.host.find(':') != std::string::npos;
  return (ipv6 ? "[" + at.host + "]" : at.host) + ":" + std::to_string(at.port);
}

}  // namespace redisync::detail
