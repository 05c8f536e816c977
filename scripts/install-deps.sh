#!/usr/bin/env bash
# Installs whatever the build, the tests and the demo need on Debian 12, and nothing that is
# already there. Safe to run again.
set -euo pipefail

packages=(
  g++-12 cmake ninja-build pkg-config
  libboost1.81-dev libboost-system1.81-dev libboost-test1.81-dev libboost-url1.81-dev
  libboost-json1.81-dev libboost-program-options1.81-dev
  libfmt-dev libssl-dev openssl
  redis-server redis-tools
  clang-14 libclang-rt-14-dev
  # The optional Prometheus exporter, the Prometheus server its test scrapes with, tmux for the
  # test of `redisync top`, and spin for the model check of the RedLock protocol.
  prometheus-cpp-dev prometheus tmux spin
)

# nodejs and npm run the Redisson-protocol client of the interoperability test.
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

sudo=()
[[ $(id -u) -ne 0 ]] && sudo=(sudo)
echo "installing: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Debian starts the packaged redis-server as a service; the tests and the demo run their own.
# So does prometheus.
for service in redis-server prometheus; do
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$service" 2>/dev/null; then
    "${sudo[@]}" systemctl stop "$service" || true
  fi
done
