// A client speaking Redisson's count-down latch protocol, written from the wire facts in
// ../shared/REDISSON-PROTOCOL.md (no npm package ports RCountDownLatch): the string `name` holds the
// count, with no expiry (missing means 0); trySetCount is SET if absent and a PUBLISH of 1 on
// `redisson_countdownlatch__channel__{name}`; countDown is DECR, the key deleted at 0 or below and
// 0 published at exactly 0. It waits the way Redisson's await does: GET, subscribe, GET again, and
// again on every message, plus after POLL_MS (Redisson's untimed await has no poll at all; a long
// one lets a test tell that a message woke it). One JSON line per event, with process.hrtime in ns.
//   node redisson_latch_peer.mjs await      PORT NAME [POLL_MS]   wait until the count is 0
//   node redisson_latch_peer.mjs count-down PORT NAME             count down once
//   node redisson_latch_peer.mjs set        PORT NAME COUNT       trySetCount
import { createRequire } from 'node:module';
import { wake_up } from './wake.mjs';

const require = createRequire(process.env.REDISSON_NODE_MODULES + '/');
const Redis = require('ioredis');

const [mode, port, name, arg] = process.argv.slice(2);
const say = (event, extra = {}) =>
  console.log(JSON.stringify({ event, t_ns: process.hrtime.bigint().toString(), ...extra }));

const channel = `redisson_countdownlatch__channel__{${name}}`;
const redis = new Redis({ host: '127.0.0.1', port: Number(port) });

const countNow = async () => Number((await redis.get(name)) ?? 0);

const countDownScript = `
local v = redis.call('decr', KEYS[1])
if v <= 0 then redis.call('del', KEYS[1]) end
if v == 0 then redis.call('publish', KEYS[2], ARGV[1]) end
return v`;

const trySetScript = `
if redis.call('exists', KEYS[1]) == 0 then
  redis.call('set', KEYS[1], ARGV[2])
  redis.call('publish', KEYS[2], ARGV[1])
  return 1
end
return 0`;

async function awaitZero(pollMs) {
  const sub = new Redis({ host: '127.0.0.1', port: Number(port) });
  const woken = new wake_up();
  sub.on('message', (_channel, message) => {
    if (message === '0') woken.message();
  });
  await sub.subscribe(channel);
  let by = 'first look';
  let waiting = false;
  while ((await countNow()) > 0) {
    if (!waiting) say('waiting');
    waiting = true;
    by = await woken.sleep(pollMs);
  }
  sub.disconnect();
  return by;
}

if (mode === 'await') {
  const by = await awaitZero(Number(arg ?? 5000));
  say('opened', { by });
} else if (mode === 'count-down') {
  const left = await redis.eval(countDownScript, 2, name, channel, '0');
  say('counted-down', { left });
} else if (mode === 'set') {
  const set = await redis.eval(trySetScript, 2, name, channel, '1', arg);
  say('set', { set: set === 1 });
} else {
  console.error(`unknown mode ${mode}`);
  process.exitCode = 2;
}
redis.disconnect();
