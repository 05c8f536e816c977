#!/usr/bin/env python3
"""W1, W2 and W3 on one standalone redis-server and on a 3-master Redis Cluster, in one run,
alternating: speed, the client's CPU per operation (the bench process's user + system time) and the
servers' (INFO cpu of every master), and Redis commands per operation (INFO commandstats of every
master). The point is overhead, not scaling: on 2 cores the cluster's three masters share the CPUs
the one server has alone. Every master, the standalone one too, has REPLICAS replicas (1, as in the
cluster tests' fixture, or 0): a replica wakes for its master's writes and takes CPU time from the
client, so only like against like measures what the cluster itself costs the client.

    python3 test/bench/cluster_overhead.py [TOOL] [ROUNDS] [REPLICAS]   # TOOL: build/release/tools/cli/redisync
"""
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

TOOL = sys.argv[1] if len(sys.argv) > 1 else "build/release/tools/cli/redisync"
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
REPLICAS = int(sys.argv[3]) if len(sys.argv) > 3 else 1
WORKLOADS = ["W1", "W2", "W3"]
# W3's default 20,000 operations take a quarter of a second: too short for CPU times in 10 ms
# steps; ten times as many make the client's CPU per operation steady to a few percent.
ENV = {"W3": {"W3_OPS": "200000"}}


def free_port():
    # The cluster bus listens on port + 10000: stay below 55536.
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port < 55536:
            return port


def cli(port, *args):
    return subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True,
                          check=True, timeout=10).stdout


def info(port, section):
    out = {}
    for line in cli(port, "INFO", section).splitlines():
        if ":" in line:
            key, value = line.split(":", 1)
            out[key] = value
    return out


def totals(ports):
    """Server CPU seconds and commands (INFO excluded) summed over `ports`."""
    cpu, calls = 0.0, 0
    for p in ports:
        c = info(p, "cpu")
        cpu += float(c["used_cpu_user"]) + float(c["used_cpu_sys"])
        for key, value in info(p, "commandstats").items():
            if key.startswith("cmdstat_") and key != "cmdstat_info":
                calls += int(value.split(",")[0].split("=")[1])
    return cpu, calls


class servers:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="redisync-cluster-bench-")
        self.procs = []

    def start(self, port, *args):
        d = os.path.join(self.dir, str(port))
        os.mkdir(d)
        self.procs.append(subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", d, "--save", "",
             "--appendonly", "no", *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for _ in range(200):
            try:
                if cli(port, "PING").strip() == "PONG":
                    return
            except subprocess.CalledProcessError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"redis-server on {port} did not answer")

    def stop(self):
        for p in self.procs:
            p.kill()
            p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def make_cluster(s, replicas):
    ports = [free_port() for _ in range(3 * (1 + replicas))]
    for p in ports:
        s.start(p, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", "2000")
    subprocess.run(["redis-cli", "--cluster", "create", *[f"127.0.0.1:{p}" for p in ports],
                    "--cluster-replicas", str(replicas), "--cluster-yes"], capture_output=True, check=True, timeout=60)
    for _ in range(400):
        if all("cluster_state:ok" in cli(p, "CLUSTER", "INFO") for p in ports):
            break
        time.sleep(0.05)
    masters = [p for p in ports if cli(p, "ROLE").splitlines()[0] == "master"]
    return f"redis-cluster://127.0.0.1:{ports[0]},127.0.0.1:{ports[1]}", masters


def run(url, ports, workload):
    cpu0, calls0 = totals(ports)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([TOOL, "bench", "--redis", url, "--workload", workload], capture_output=True,
                         text=True, check=True, timeout=300, env={**os.environ, **ENV.get(workload, {})}).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu1, calls1 = totals(ports)
    r = json.loads(out.strip().splitlines()[-1])
    ops = r.get("n") or r.get("m")
    client_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "ops_per_s": r.get("ops_per_s") or r.get("cs_per_s"),
        "client_us_per_op": 1e6 * client_s / ops,
        "server_us_per_op": 1e6 * (cpu1 - cpu0) / ops,
        "cmds_per_op": (calls1 - calls0) / ops,
        "wait_p99_ms": r.get("wait_p99_ms"),
        "p99_ms": r.get("p99_ms"),
    }


def main():
    s = servers()
    try:
        standalone = free_port()
        s.start(standalone)
        for _ in range(REPLICAS):
            s.start(free_port(), "--replicaof", "127.0.0.1", str(standalone))
        cluster_url, masters = make_cluster(s, REPLICAS)
        targets = {"standalone": (f"redis://127.0.0.1:{standalone}", [standalone]),
                   "cluster": (cluster_url, masters)}
        results = {(t, w): [] for t in targets for w in WORKLOADS}
        for _ in range(ROUNDS):
            for w in WORKLOADS:
                for t, (url, ports) in targets.items():
                    results[(t, w)].append(run(url, ports, w))
        for (t, w), runs in results.items():
            med = {k: statistics.median(x[k] for x in runs) for k in runs[0] if runs[0][k] is not None}
            print(json.dumps({"target": t, "workload": w, "rounds": len(runs),
                              **{k: round(v, 2) for k, v in med.items()}}))
    finally:
        s.stop()


if __name__ == "__main__":
    main()
