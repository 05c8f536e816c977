#include "routing/cluster_map.hpp"

#include "address.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>

namespace redisync::detail::routing {

namespace {

// The master of one shard of a CLUSTER SHARDS answer, if it names one with an address.
std::optional<node_address> master_of(resp::value const& members, bool tls, std::string_view asked_host) {
  for (auto const& m : members.elements()) {
    if (m.field_text("role") != "master") continue;
    std::string_view host = m.field_text("endpoint");
    if (host.empty() || host == "?") host = m.field_text("ip");
    auto const* port = m.field(tls ? "tls-port" : "port");
    if (port == nullptr || port->kind() != resp::type::integer || port->integer() <= 0 || port->integer() > 65535) {
      continue;
    }
    return node_address{std::string{host.empty() ? asked_host : host}, static_cast<std::uint16_t>(port->integer())};
  }
  return std::nullopt;
}

std::vector<slot_range> ranges_of(resp::value const* slots) {
  std::vector<slot_range> out;
  if (slots == nullptr) return out;
  auto const e = slots->elements();
  for (std::size_t i = 0; i + 1 < e.size(); i += 2) {
    if (e[i].kind() != resp::type::integer || e[i + 1].kind() != resp::type::integer) continue;
    auto const first = e[i].integer(), last = e[i + 1].integer();
    if (first < 0 || last < first || last >= cluster_slots) continue;
    out.emplace_back(static_cast<slot_type>(first), static_cast<slot_type>(last));
  }
  return out;
}

}  // namespace

shards_answer read_shards(resp::value const& reply, bool tls, std::string_view asked_host) {
  shards_answer out;
  if (reply.is_error()) {
    // A server that is no cluster node will not become one.
    std::string_view const text = reply.text();
    std::string_view const hint =
        text.find("cluster support disabled") != std::string_view::npos ? "it is not a cluster node: use redis:// for one server"
        : text.find("unknown command") != std::string_view::npos
            ? "it knows no CLUSTER command: is it a Sentinel? use redis-sentinel://"
            : "";
    out.not_a_cluster = !hint.empty();
    out.failure = hint.empty() ? std::string{text} : fmt::format("{} ({})", text, hint);
    return out;
  }
  for (auto const& s : reply.elements()) {
    auto ranges = ranges_of(s.field("slots"));
    auto const* members = s.field("nodes");
    if (members == nullptr || ranges.empty()) continue;
    if (auto master = master_of(*members, tls, asked_host)) out.shards.push_back({std::move(ranges), std::move(*master)});
  }
  if (out.shards.empty()) out.failure = "no shard serves a slot";
  return out;
}

std::optional<redirect> read_redirect(std::string_view text, node_address const& replied) {
  bool const ask = text.starts_with("ASK ");
  if (!ask && !text.starts_with("MOVED ")) return std::nullopt;
  text.remove_prefix(ask ? 4 : 6);
  auto const space = text.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  slot_type slot = 0;
  auto const slot_text = text.substr(0, space);
  auto const [end, ec] = std::from_chars(slot_text.data(), slot_text.data() + slot_text.size(), slot);
  auto to = parse_host_port(text.substr(space + 1), replied.host);
  if (ec != std::errc{} || end != slot_text.data() + slot_text.size() || slot >= cluster_slots || !to) return std::nullopt;
  return redirect{ask, slot, std::move(*to)};
}

slot_type slot_map::a_slot_of(node_id node) const noexcept {
  auto const it = std::find(slots_.begin(), slots_.end(), node);
  return it == slots_.end() ? 0 : static_cast<slot_type>(it - slots_.begin());
}

bool slot_map::update(std::vector<shard> const& shards, std::vector<node_id> const& masters) {
  auto slots = slots_;
  for (std::size_t i = 0; i < shards.size() && i < masters.size(); ++i) {
    for (auto const& [first, last] : shards[i].ranges) {
      std::fill(slots.begin() + first, slots.begin() + std::min<slot_type>(last, cluster_slots - 1) + 1, masters[i]);
    }
  }
  bool changed = false;
  for (slot_type slot = 0; slot < cluster_slots && !changed; ++slot) {
    changed = slots_[slot] != no_node && slots[slot] != slots_[slot];
  }
  slots_ = std::move(slots);
  known_ = true;
  return changed;
}

bool slot_map::move(slot_type slot, node_id node) noexcept {
  bool const changed = slots_[slot] != no_node && slots_[slot] != node;
  slots_[slot] = node;
  return changed;
}

}  // namespace redisync::detail::routing
