#!/usr/bin/env bash
# Remakes docs/safety-timeline.svg: the fault tier's pause and kill scenarios on one picture.
# Three `redisync stress` processes share one lock (500 ms leases, fenced writes); one is paused
# (SIGSTOP) past its lease and resumed, another is killed (SIGKILL) while it works; then
# `redisync timeline` draws their histories with the two faults marked.
#   scripts/safety_timeline.sh [REDISYNC_TOOL]     (default: build/release/tools/cli/redisync)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tool=${1:-build/release/tools/cli/redisync}
work=$(mktemp -d)
# Sends SIG$2 to pid $1 and logs it with the monotonic time read just before (reading it takes a
# python start, tens of ms: after the signal, a resumed process's first events would come first).
fault() {
  local t
  t=$(python3 -c 'import time; print(time.monotonic_ns())')
  kill "-$2" "$1"
  echo "{\"t_ns\":$t,\"fault\":\"SIG$2 pid $1\"}" >>"$work/faults"
}
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
  --pidfile "$work/redis.pid" --dir "$work" >/dev/null
trap 'kill "$(cat "$work/redis.pid")" 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done

pids=()
for i in 1 2 3; do
  "$tool" stress --redis "redis://127.0.0.1:$port" --lock account --lease-ms 500 --fence-key account:fence \
    --hold-ms 40 --iterations 60 --history "$work/p$i.history" >"$work/p$i.json" 2>/dev/null &
  pids+=($!)
done
sleep 1
# Paused while it holds: its last event logged is a grant.
for _ in $(seq 1000); do
  tail -n 1 "$work/p1.history" | grep -q '"event":"acquired"' && break
  sleep 0.002
done
fault "${pids[0]}" STOP
sleep 1.5
fault "${pids[0]}" CONT
sleep 0.5
fault "${pids[1]}" KILL
wait "${pids[0]}" "${pids[2]}" || true
"$tool" timeline "$work"/p1.history "$work"/p2.history "$work"/p3.history --faults "$work/faults" \
  --title "3 processes on one lock: one paused past its lease, one killed" -o docs/safety-timeline.svg
