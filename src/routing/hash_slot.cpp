#include "routing/hash_slot.hpp"

#include <array>
#include <string>
#include <vector>

namespace redisync::detail::routing {

namespace {

constexpr std::array<std::uint16_t, 256> make_table() {
  std::array<std::uint16_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t crc = i << 8;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 0x8000) != 0 ? (crc << 1) ^ 0x1021 : crc << 1;
    table[i] = static_cast<std::uint16_t>(crc);
  }
  return table;
}

constexpr auto table = make_table();

std::uint16_t crc16(std::string_view bytes) noexcept {
  std::uint16_t crc = 0;
  for (unsigned char const c : bytes) crc = static_cast<std::uint16_t>(crc << 8) ^ table[((crc >> 8) ^ c) & 0xff];
  return crc;
}

}  // namespace

std::uint32_t hash_slot(std::string_view key) noexcept {
  if (auto const open = key.find('{'); open != std::string_view::npos) {
    auto const close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) key = key.substr(open + 1, close - open - 1);
  }
  return crc16(key) & (cluster_slots - 1);
}

std::string_view slot_tag(std::uint32_t slot) {
  // Decimal numbers, the first that hashes to each slot: every slot is hit within a few hundred
  // thousand, once per process.
  static std::vector<std::string> const tags = [] {
    std::vector<std::string> out(cluster_slots);
    std::uint32_t found = 0;
    for (std::uint64_t n = 0; found < cluster_slots; ++n) {
      auto text = std::to_string(n);
      auto& tag = out[crc16(text) & (cluster_slots - 1)];
      if (!tag.empty()) continue;
      tag = std::move(text);
      ++found;
    }
    return out;
  }();
  return tags[slot & (cluster_slots - 1)];
}

std::string key_beside(std::string_view prefix, std::string_view name) {
  bool const tagged = name.find('{') != std::string_view::npos;
  std::string out;
  out.reserve(prefix.size() + name.size() + 2);
  out.append(prefix);
  if (!tagged) out += '{';
  out.append(name);
  if (!tagged) out += '}';
  return out;
}

}  // namespace redisync::detail::routing
