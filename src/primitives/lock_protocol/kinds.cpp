#include "primitives/lock_protocol/kinds.hpp"

#include "primitives/lock_protocol/protocol.hpp"

#include <array>

namespace redisync::detail::lock_protocol {

namespace {

// In lock_kind's order: facts_of indexes it.
constexpr std::array<kind_facts const*, 4> kinds{&reentrant_facts, &fair_facts, &read_facts, &write_facts};

}  // namespace

kind_facts const& facts_of(lock_kind kind) { return *kinds[static_cast<std::size_t>(kind)]; }

script_args force_hash_args(std::string const& name) { return {{name}, {channel_of(name)}}; }

}  // namespace redisync::detail::lock_protocol
