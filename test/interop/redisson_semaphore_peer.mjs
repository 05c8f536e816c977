// A client speaking Redisson's semaphore protocol, written from the wire facts in
// ../shared/REDISSON-PROTOCOL.md (no npm package ports RSemaphore): the string `name` holds the
// permits free, with no expiry; a take is GET and, when enough are free, DECRBY (a missing string
// means none are free); a release is INCRBY and a PUBLISH of the new count on `redisson_sc:{name}`.
// It waits the way Redisson does: it tries, then subscribes, tries, and tries again on every
// message that announces free permits (one waiter here: min(waiters, count) is one) and after
// POLL_MS. Redisson's acquire() has no poll at all; a long one lets a test tell that a message woke
// it. One JSON line per event, with process.hrtime in nanoseconds.
//   node redisson_semaphore_peer.mjs hold      PORT NAME K HOLD_MS [POLL_MS]  take K, hold, give back
//   node redisson_semaphore_peer.mjs contend   PORT NAME K [POLL_MS]          try once, then wait
//   node redisson_semaphore_peer.mjs available PORT NAME                      the permits free
// HOLD_MS `signal` holds until SIGUSR2, so that a test gives the permits back once its side waits.
import { createRequire } from 'node:module';
import { wake_up } from './wake.mjs';

const require = createRequire(process.env.REDISSON_NODE_MODULES + '/');
const Redis = require('ioredis');

const [mode, port, name, k, ...rest] = process.argv.slice(2);
const holdMs = mode === 'hold' ? rest.shift() : undefined;
const pollMs = Number(rest[0] ?? 5000);
const say = (event, extra = {}) =>
  console.log(JSON.stringify({ event, t_ns: process.hrtime.bigint().toString(), ...extra }));

// Listening from the start: a SIGUSR2 that came before the handler would end the process.
const signalled = new Promise((resolve) => process.once('SIGUSR2', resolve));

const channel = name.includes('{') ? `redisson_sc:${name}` : `redisson_sc:{${name}}`;

// KEYS name; ARGV k. 1 taken, 0 too few free.
const takeScript = `
local free = redis.call('get', KEYS[1])
if free == false or tonumber(free) < tonumber(ARGV[1]) then return 0 end
redis.call('decrby', KEYS[1], ARGV[1])
return 1`;

// KEYS name, channel; ARGV k. Replies the count free after and how many subscribers heard it.
const giveBackScript = `
local free = redis.call('incrby', KEYS[1], ARGV[1])
return {free, redis.call('publish', KEYS[2], free)}`;

const redis = new Redis({ host: '127.0.0.1', port: Number(port) });

const tryTake = async () => (await redis.eval(takeScript, 1, name, k)) === 1;

async function giveBack() {
  const [free, heard] = await redis.eval(giveBackScript, 2, name, channel, k);
  say('released', { free, heard });
}

// Subscribed before each try, so that no release between a try and the sleep goes unheard; a
// message that comes while a try is out counts too. Says what led to the try that took the permits.
async function waitAndTake() {
  const sub = new Redis({ host: '127.0.0.1', port: Number(port) });
  let messaged = false;
  const woken = new wake_up();
  sub.on('message', (_channel, count) => {
    if (Number(count) < 1) return;
    messaged = true;
    woken.message();
  });
  await sub.subscribe(channel);
  let by = 'subscribe';
  let waiting = false;
  for (;;) {
    messaged = false;
    if (await tryTake()) break;
    if (messaged) {
      by = 'message';
      continue;
    }
    if (!waiting) say('waiting');
    waiting = true;
    by = await woken.sleep(pollMs);
  }
  sub.disconnect();
  return by;
}

if (mode === 'hold') {
  const by = (await tryTake()) ? 'first try' : await waitAndTake();
  say('acquired', { by });
  await (holdMs === 'signal' ? signalled : new Promise((r) => setTimeout(r, Number(holdMs))));
  await giveBack();
} else if (mode === 'contend') {
  let by = 'first try';
  if (!(await tryTake())) {
    say('busy');
    by = await waitAndTake();
  }
  say('acquired', { by });
  await giveBack();
} else if (mode === 'available') {
  const free = await redis.get(name);
  say('available', { permits: free === null ? null : Number(free) });
} else {
  console.error(`unknown mode ${mode}`);
  process.exitCode = 2;
}
redis.disconnect();
