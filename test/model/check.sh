#!/usr/bin/env bash
# Checks the RedLock model (red_lock.pml) with spin: with the rejoin rule, no reachable state
# breaks an assertion (tokens only rise, at most one hold valid); without it, spin must find the
# counterexample. States are stored by hash compaction (HC4), so a collision could in principle
# hide a state; spin reports the odds.
set -euo pipefail
command -v spin >/dev/null || { echo "spin is not installed (Debian: apt-get install spin)"; exit 1; }
model="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/red_lock.pml"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

search() {  # $1: REJOIN (1: the rule on, 0: off)
  spin -DREJOIN="$1" -a "$model" >/dev/null
  gcc -O2 -DSAFETY -DHC4 -DMEMLIM=6000 -w -o pan pan.c
  ./pan -m200000 >pan.out 2>&1 || true
}

search 1
if ! grep -q "errors: 0" pan.out || grep -q -E "max search depth too small|MEMLIM" pan.out; then
  cat pan.out
  echo "red_lock.pml with the rejoin rule: the search failed or was cut short"
  exit 1
fi
grep -E "states, stored|elapsed time" pan.out

search 0
if ! grep -q "assertion violated" pan.out; then
  cat pan.out
  echo "red_lock.pml without the rejoin rule: spin found no counterexample"
  exit 1
fi
grep -E "assertion violated" pan.out | cut -c1-120
echo "without the rejoin rule: counterexample found, as expected"
