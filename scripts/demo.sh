#!/usr/bin/env bash
# The main job: builds the redisync tool (release) and runs its live demo of the locks.
#   scripts/demo.sh                         starts a private redis-server on a free loopback port
#   scripts/demo.sh --redis redis://host:6379   uses an existing server
# Installs what is missing first.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target redisync_tool >/dev/null
exec build/release/tools/cli/redisync demo "$@"
