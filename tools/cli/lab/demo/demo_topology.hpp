#pragma once

namespace redisync::cli {

// redisync demo --cluster / --sentinel (demo_topology.cpp): exit codes as demo's.
int demo_cluster();
int demo_sentinel();

}  // namespace redisync::cli
