#!/usr/bin/env python3
"""Checks issue 3's performance targets in one run of ../shared/peers/run.sh.

Usage: targets.py RUN.jsonl [RUN.jsonl ...]

Every row whose peer label starts with "redisync" is compared with the same run's floor and best
peer. Round trips per critical section are counted from the server's view: script calls, plus the
workload's own GET and SET, plus SUBSCRIBE and UNSUBSCRIBE (the only commands the client sends
outside scripts). Exits 1 if any target misses in any row.
"""
import json
import sys


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def best_peer(rows, workload, rate):
    peers = [r for r in rows
             if r.get('workload') == workload and r.get('ok')
             and not r['peer'].startswith(('redisync', 'redis-benchmark', '_'))]
    return max(peers, key=lambda r: r[rate])


def check(path):
    rows = load(path)
    limits = {r['test']: r['rps'] for r in rows if r.get('workload') == 'LIMIT'}
    if 'evalsha -c1 -P1' not in limits:
        print(f"{path}: no redis-benchmark limits (an unfinished run?)")
        return False
    floor = limits['evalsha -c1 -P1'] / 2
    best_w2 = best_peer(rows, 'W2', 'cs_per_s')
    best_w3 = best_peer(rows, 'W3', 'ops_per_s')
    print(f"{path}: W1 floor {floor:,.0f} pairs/s; best W2 {best_w2['peer']} {best_w2['cs_per_s']:,.0f} CS/s; "
          f"best W3 {best_w3['peer']} {best_w3['ops_per_s']:,.0f} pairs/s")
    all_met = True
    for r in rows:
        if not r.get('peer', '').startswith('redisync'):
            continue
        w = r['workload']
        if w == 'W1':
            ratio = r['ops_per_s'] / floor
            met = ratio >= 0.9
            figures = f"{r['ops_per_s']:,.0f} pairs/s = {ratio:.2f} of the floor (target 0.9)"
        elif w == 'W2':
            b = r['cmd_breakdown']
            trips = r['scripts_per_cs'] + 2 + b.get('subscribe', 0) + b.get('unsubscribe', 0)
            ratio = r['cs_per_s'] / best_w2['cs_per_s']
            met = r['safety_ok'] and trips <= 4.5 and r['wait_p99_ms'] < 20 and ratio > 1
            figures = (f"{r['cs_per_s']:,.0f} CS/s = {ratio:.2f}x the best peer, {trips:.2f} round trips, "
                       f"wait p99 {r['wait_p99_ms']} ms, handoff {r['handoff_ratio']}, safe {r['safety_ok']}")
        elif w == 'W3':
            ratio = r['ops_per_s'] / best_w3['ops_per_s']
            met = ratio >= 3
            figures = f"{r['ops_per_s']:,.0f} pairs/s = {ratio:.2f}x the best peer (target 3)"
        else:
            continue
        all_met = all_met and met
        print(f"  {'met ' if met else 'MISS'} {r['peer']} {w}: {figures}")
    return all_met


if __name__ == '__main__':
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    results = [check(path) for path in sys.argv[1:]]
    sys.exit(0 if all(results) else 1)
