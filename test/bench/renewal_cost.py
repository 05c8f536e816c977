#!/usr/bin/env python3
"""Redis time per renewed hold: the watchdog's renewal script of reads (rw_renew_reads.lua) against
the lock's (lock_renew.lua), called directly on a private redis-server with the arguments the client
sends, so that nothing but the scripts is measured. Time is INFO commandstats' EVALSHA usec (and
INFO cpu, parsing included) over the holds renewed; each figure is the best of three passes.

    python3 test/bench/renewal_cost.py [--before REV] [--holds 100] [--readers 1,10,100] [--hash 1000]

Every call renews `--holds` holds: locks, or reads with `--readers` readers of one lock in the call
(at most `--holds`) and `--hash` readers in that lock's hash (at least as many as in the call; one
when a lock has one reader). `--before REV` also measures the script of a revision before cd131c2,
whose renewal of reads was not given the readers' level keys.
"""
import argparse
import re
import socket
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LEASE = "30000"
OWNER = "4f1b2c3d-aaaa-bbbb-cccc-0123456789ab:"  # a client's id, then a task's number
# What a read renewal cannot do without in Redisson's layout, one reader to a lock: look at the
# reader's count, move its level key and the hash's expiry. Nothing else, to compare with.
THREE_COMMANDS = """
local renewed = {}
for j = 1, #KEYS / 2 do
  local a = 3 * j
  if redis.call('hget', KEYS[2 * j - 1], ARGV[a + 1]) then
    redis.call('pexpire', ARGV[a + 2], ARGV[1])
    redis.call('pexpire', KEYS[2 * j - 1], ARGV[1], 'GT')
    renewed[j] = 1
  end
end
return renewed
"""


def source(path, rev):
    """A script's text as the build embeds it (`-- include: NAME.lua` replaced), now or at `rev`."""
    def read(p):
        if rev is None:
            return (ROOT / p).read_text()
        return subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{p}"], capture_output=True, text=True,
                              check=True).stdout
    return re.sub(r"-- include: ([a-z_]+\.lua)", lambda m: read("src/primitives/lua/" + m.group(1)), read(path))


class Redis:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.file = self.sock.makefile("rb")

    def send(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.sock.sendall(b"".join(out))

    def read(self):
        line = self.file.readline()
        kind, rest = line[:1], line[1:-2]
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind in (b"+", b":"):
            return int(rest) if kind == b":" else rest.decode()
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self.file.read(n + 2)[:-2]
        return [self.read() for _ in range(int(rest))]

    def call(self, *args):
        self.send(*args)
        return self.read()

    def info(self, section):
        text = self.call("INFO", section).decode()
        return dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)


def measure(r, sha, keys, argv, holds, calls):
    """Best of three passes: (EVALSHA µs per renewed hold, server CPU µs per renewed hold)."""
    best = None
    for _ in range(3):
        r.call("CONFIG", "RESETSTAT")
        cpu = r.info("cpu")
        cpu0 = float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])
        for _ in range(calls):
            r.send("EVALSHA", sha, len(keys), *keys, *argv)
        for _ in range(calls):
            flags = r.read()
        assert all(f == 1 for f in flags), flags
        cpu = r.info("cpu")
        used = float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"]) - cpu0
        usec = float(re.search(r"usec=(\d+)", r.info("commandstats")["cmdstat_evalsha"]).group(1))
        figures = (usec / calls / holds, used * 1e6 / calls / holds)
        best = figures if best is None or figures < best else best
    return best


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--before")
    parser.add_argument("--holds", type=int, default=100)
    parser.add_argument("--readers", default="1,10,100")
    parser.add_argument("--hash", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                               "--appendonly", "no"], stdout=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                r = Redis(port)
                r.call("PING")
                break
            except OSError:
                time.sleep(0.05)
        n = args.holds
        locks = [f"bench:lock:{i}" for i in range(n)]
        for name in locks:
            r.call("HSET", name, OWNER + "0", 1)
            r.call("PEXPIRE", name, LEASE)
        sha = r.call("SCRIPT", "LOAD", source("src/primitives/lock/lock_renew.lua", None))
        lock_us, lock_cpu = measure(r, sha, locks, [LEASE] + [OWNER + "0"] * n, n, args.calls)
        print(f"locks: {lock_us:.2f} µs per renewed hold (cpu {lock_cpu:.2f})")
        revisions = [("now", None)] + ([(args.before, args.before)] if args.before else [])
        for readers in (int(x) for x in args.readers.split(",")):
            per_lock = min(readers, n)
            lock_count = n // per_lock
            in_hash = max(args.hash, per_lock) if readers > 1 else 1
            keys, argv_now, argv_before = [], [LEASE, ""], [LEASE, ""]
            for i in range(lock_count):
                name, base = f"bench:rw:{readers}:{i}", f"{{bench:rw:{readers}:{i}}}"
                owners = [OWNER + str(k) for k in range(in_hash)]
                for owner in owners:
                    r.call("HSET", name, "mode", "read", owner, 1)
                    r.call("SET", f"{base}:{owner}:rwlock_timeout:1", 1, "PX", LEASE)
                r.call("PEXPIRE", name, LEASE)
                ours = owners[:per_lock]
                keys += [name, base]
                argv_before += [str(per_lock), *ours]
                argv_now += [str(per_lock), *ours, *(f"{base}:{o}:rwlock_timeout:1" for o in ours)]
            scripts = [(label, source("src/primitives/rw_lock/rw_renew_reads.lua", rev), rev) for label, rev in revisions]
            if per_lock == 1:
                scripts.append(("three commands and nothing else", THREE_COMMANDS, None))
            for label, text, rev in scripts:
                sha = r.call("SCRIPT", "LOAD", text)
                argv = argv_now if rev is None else argv_before
                us, cpu = measure(r, sha, keys, argv, lock_count * per_lock, args.calls)
                print(f"reads, {per_lock} to a lock in the call ({in_hash} in its hash), {label}: "
                      f"{us:.2f} µs per renewed hold (cpu {cpu:.2f}), {us / lock_us:.2f}x a lock's")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
