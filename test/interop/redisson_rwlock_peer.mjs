// A client speaking Redisson's read-write lock protocol, written from the wire facts in
// ../shared/REDISSON-PROTOCOL.md (no npm package ports RReadWriteLock): the hash with `mode`, reader
// fields and the `<owner>:write` field, a timeout key per read level, the hash's PEXPIRE kept at the
// longest of them, and `redisson_rwlock:{name}` with `0` after a read unlock and `1` after a write
// unlock. It waits the way Redisson does: subscribe, try, and on every message or when the TTL the
// try returned has passed, try again. One JSON line per event, with process.hrtime in nanoseconds.
//   node redisson_rwlock_peer.mjs hold    read|write PORT NAME HOLD_MS   take, hold, release
//   node redisson_rwlock_peer.mjs contend read|write PORT NAME           try once, then wait
import { createRequire } from 'node:module';
import { randomUUID } from 'node:crypto';

const require = createRequire(process.env.REDISSON_NODE_MODULES + '/');
const Redis = require('ioredis');

const [mode, side, port, name, holdMs] = process.argv.slice(2);
const say = (event, extra = {}) =>
  console.log(JSON.stringify({ event, t_ns: process.hrtime.bigint().toString(), ...extra }));

const lease = 30000;
const owner = `${randomUUID()}:1`;
const base = name.includes('{') ? name : `{${name}}`;
const channel = name.includes('{') ? `redisson_rwlock:${name}` : `redisson_rwlock:{${name}}`;

// Redisson's read lock: KEYS lock, timeout prefix; ARGV lease, owner, owner:write.
const readLock = `
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call('hset', KEYS[1], 'mode', 'read')
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('set', KEYS[2] .. ':1', 1)
  redis.call('pexpire', KEYS[2] .. ':1', ARGV[1])
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if (mode == 'read') or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
  local ind = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  local key = KEYS[2] .. ':' .. ind
  redis.call('set', key, 1)
  redis.call('pexpire', key, ARGV[1])
  local remain = redis.call('pttl', KEYS[1])
  redis.call('pexpire', KEYS[1], math.max(remain, ARGV[1]))
  return nil
end
return redis.call('pttl', KEYS[1])`;

// Redisson's read unlock: KEYS lock, channel, timeout prefix, key prefix; ARGV message, owner.
const readUnlock = `
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call('publish', KEYS[2], ARGV[1])
  return 1
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then return nil end
local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if counter == 0 then redis.call('hdel', KEYS[1], ARGV[2]) end
redis.call('del', KEYS[3] .. ':' .. (counter + 1))
if redis.call('hlen', KEYS[1]) > 1 then
  local maxRemain = -3
  local keys = redis.call('hkeys', KEYS[1])
  for n, key in ipairs(keys) do
    counter = tonumber(redis.call('hget', KEYS[1], key))
    if type(counter) == 'number' then
      for i = counter, 1, -1 do
        local remain = redis.call('pttl', KEYS[4] .. ':' .. key .. ':rwlock_timeout:' .. i)
        maxRemain = math.max(remain, maxRemain)
      end
    end
  end
  if maxRemain > 0 then
    redis.call('pexpire', KEYS[1], maxRemain)
    return 0
  end
  if mode == 'write' then return 0 end
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], ARGV[1])
return 1`;

// Redisson's write lock: KEYS lock; ARGV lease, owner:write.
const writeLock = `
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call('hset', KEYS[1], 'mode', 'write')
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  local current = redis.call('pttl', KEYS[1])
  redis.call('pexpire', KEYS[1], current + ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])`;

// Redisson's write unlock: KEYS lock, channel; ARGV message, lease, owner:write.
const writeUnlock = `
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call('publish', KEYS[2], ARGV[1])
  return 1
end
if mode == 'write' then
  if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end
  local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1)
  if counter > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    return 0
  end
  redis.call('hdel', KEYS[1], ARGV[3])
  if redis.call('hlen', KEYS[1]) == 1 then
    redis.call('del', KEYS[1])
    redis.call('publish', KEYS[2], ARGV[1])
  else
    redis.call('hset', KEYS[1], 'mode', 'read')
  end
  return 1
end
return nil`;

const redis = new Redis({ host: '127.0.0.1', port: Number(port) });
const writer = `${owner}:write`;
const timeouts = `${base}:${owner}:rwlock_timeout`;

const tryLock = () =>
  side === 'read'
    ? redis.eval(readLock, 2, name, timeouts, lease, owner, writer)
    : redis.eval(writeLock, 1, name, lease, writer);
const unlock = () =>
  side === 'read'
    ? redis.eval(readUnlock, 4, name, channel, timeouts, base, '0', owner)
    : redis.eval(writeUnlock, 2, name, channel, '1', lease, writer);

// Redisson's wait: subscribed first, then a try after every message or when the TTL has passed.
// A message that comes while a try is out counts too (Redisson keeps it as a semaphore permit):
// the unlock may run just after the try found the lock held.
async function lock() {
  const sub = new Redis({ host: '127.0.0.1', port: Number(port) });
  let messaged = false;
  let wake = () => {};
  sub.on('message', () => {
    messaged = true;
    wake();
  });
  await sub.subscribe(channel);
  for (;;) {
    messaged = false;
    const ttl = await tryLock();
    if (ttl === null) break;
    if (messaged) continue;
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, ttl);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    wake = () => {};
  }
  sub.disconnect();
}

if (mode === 'hold') {
  await lock();
  say('locked');
  await new Promise((r) => setTimeout(r, Number(holdMs)));
  await unlock();
  say('released');
} else {
  const ttl = await tryLock();
  say('tried', { held: ttl === null });
  if (ttl === null) await unlock();
  await lock();
  say('locked');
  await unlock();
}
redis.disconnect();
