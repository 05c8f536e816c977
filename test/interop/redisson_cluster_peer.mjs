// A client speaking Redisson's lock protocol on a Redis Cluster, written from the protocol facts:
// Redisson's lock hash and scripts, waiting with SSUBSCRIBE on the lock's channel and unlocking
// with the publish command passed to the script, SPUBLISH (node-redisson publishes with PUBLISH
// even on a cluster, which sharded listeners never hear). One JSON line per event, with
// process.hrtime (CLOCK_MONOTONIC) in nanoseconds.
//   node redisson_cluster_peer.mjs hold    HOST:PORT NAME HOLD_MS   take the lock, hold it, release it
//   node redisson_cluster_peer.mjs contend HOST:PORT NAME           try once, then wait for the lock
import { createRequire } from 'node:module';
import { randomUUID } from 'node:crypto';

const require = createRequire(process.env.REDISSON_NODE_MODULES + '/');
const Redis = require('ioredis');

const [mode, seed, name, holdMs] = process.argv.slice(2);
const [host, port] = seed.split(':');
const say = (event, extra = {}) =>
  console.log(JSON.stringify({ event, t_ns: process.hrtime.bigint().toString(), ...extra }));

const cluster = new Redis.Cluster([{ host, port: Number(port) }], { shardedSubscribers: true });
const channel = name.includes('{') ? `redisson_lock__channel:${name}` : `redisson_lock__channel:{${name}}`;
const owner = `${randomUUID()}:1`;
const lease = 30000;
const tryLock =
  "if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then " +
  "redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; " +
  "return redis.call('pttl', KEYS[1]);";
const unlock =
  "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil; end; " +
  "local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); " +
  "if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); return 0; " +
  "else redis.call('del', KEYS[1]); redis.call(ARGV[4], KEYS[2], ARGV[1]); return 1; end;";

const attempt = async () => (await cluster.eval(tryLock, 1, name, lease, owner)) === null;

// Waits for the lock: tries again on each unlock message, and when the holder's TTL has run out.
async function lock() {
  let wake;
  cluster.on('smessage', (ch) => {
    if (ch === channel && wake) wake();
  });
  await cluster.ssubscribe(channel);
  for (;;) {
    const ttl = await cluster.eval(tryLock, 1, name, lease, owner);
    if (ttl === null) break;
    await new Promise((resolve) => {
      wake = resolve;
      setTimeout(resolve, Math.max(Number(ttl), 1));
    });
  }
  await cluster.sunsubscribe(channel);
}

if (mode === 'hold') {
  await lock();
  say('locked');
  await new Promise((r) => setTimeout(r, Number(holdMs)));
  await cluster.eval(unlock, 2, name, channel, '0', lease, owner, 'spublish');
  say('released');
} else {
  say('tried', { held: await attempt() });
  await lock();
  say('locked');
  await cluster.eval(unlock, 2, name, channel, '0', lease, owner, 'spublish');
}
await cluster.quit();
process.exit(0);
