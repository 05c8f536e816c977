#pragma once

// The cluster's slot map without sockets: what a CLUSTER SHARDS answer and a MOVED or ASK reply
// say, and the map they change. The cluster router (routing/cluster) feeds it the replies its
// connections get and acts on what it returns; each step is unit-tested on its own.

#include "routing/hash_slot.hpp"
#include "routing/router.hpp"

#include <redisync/resp/value.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace redisync::detail::routing {

using slot_range = std::pair<slot_type, slot_type>;  // first and last slot, both included

// Slots and the master that serves them.
struct shard {
  std::vector<slot_range> ranges;
  node_address master;
  friend bool operator==(shard const&, shard const&) = default;
};

// What one node's answer to CLUSTER SHARDS says: the shards that serve slots, or why none.
struct shards_answer {
  std::vector<shard> shards;
  std::string failure;         // empty when there are shards
  bool not_a_cluster = false;  // the server will never answer it (no cluster node, a Sentinel)
};
// `tls`: masters are reached on their tls-port; `asked_host`: the node asked, for a master that
// names no host of its own.
shards_answer read_shards(resp::value const& reply, bool tls, std::string_view asked_host);

// A MOVED (the slot has another master) or an ASK (this one command goes to the importing node).
struct redirect {
  bool ask = false;
  slot_type slot = 0;
  node_address to;
  friend bool operator==(redirect const&, redirect const&) = default;
};
// "MOVED <slot> <host>:<port>" or "ASK ...", from the node at `replied`; nothing for other text.
std::optional<redirect> read_redirect(std::string_view text, node_address const& replied);

// The master of each slot, as last known.
class slot_map {
 public:
  static constexpr node_id no_node = ~node_id{0};

  node_id node_of(slot_type slot) const noexcept { return slots_[slot]; }
  // A slot the node serves (0 if none).
  slot_type a_slot_of(node_id node) const noexcept;
  // A map was loaded.
  bool known() const noexcept { return known_; }

  // Gives the slots of `shards` the nodes `masters` (in the same order); a slot no shard names
  // keeps its master (a shard whose master is down is left out until one is promoted). True if a
  // slot known before has another master now.
  bool update(std::vector<shard> const& shards, std::vector<node_id> const& masters);
  // A MOVED: `slot` is served by `node` now. True if it was known to be served by another.
  bool move(slot_type slot, node_id node) noexcept;

 private:
  std::vector<node_id> slots_ = std::vector<node_id>(cluster_slots, no_node);
  bool known_ = false;
};

}  // namespace redisync::detail::routing
