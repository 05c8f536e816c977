#pragma once

// Node addresses as text: the one parser of ports and "host:port" (URLs, MOVED and ASK replies,
// the Sentinels' answers) and the one way they are printed.

#include <redisync/config.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace redisync::detail {

// A port from 1 to 65535 written in decimal, and nothing else.
std::optional<std::uint16_t> parse_port(std::string_view text);

// "host:port", the port after the last colon (an IPv6 host may be bare or in brackets); an empty
// host is `host_if_empty` (a MOVED reply's "":port names the node that replied).
std::optional<node_address> parse_host_port(std::string_view text, std::string_view host_if_empty = {});

// "host:port", an IPv6 host in brackets.
std::string address_text(node_address const& at);

}  // namespace redisync::detail
