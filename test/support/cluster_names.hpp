#pragma once

// Names for cluster tests: one whose slot a given master serves.

#include "testbed/redis_cluster.hpp"

#include <cstddef>
#include <string>

namespace redisync::test {

// A name `prefix<n>suffix` whose slot the master `master_index` serves now.
inline std::string name_on(process::redis_cluster& cluster, std::size_t master_index, std::string const& prefix,
                           std::string const& suffix = {}) {
  for (int i = 0;; ++i) {
    auto name = prefix + std::to_string(i) + suffix;
    if (cluster.master_of_slot(process::key_slot(name)) == master_index) return name;
  }
}

}  // namespace redisync::test
