// A client speaking Redisson's lock protocol (node-redisson: Redisson's scripts, hash layout,
// channel and unlock message), for the interoperability test. One JSON line per event, with
// process.hrtime (CLOCK_MONOTONIC) in nanoseconds.
//   node redisson_peer.mjs hold    PORT NAME HOLD_MS   take the lock, hold it, release it
//   node redisson_peer.mjs contend PORT NAME           try once, then wait for the lock
import { createRequire } from 'node:module';

const require = createRequire(process.env.REDISSON_NODE_MODULES + '/');
const { Redisson } = require('node-redisson');

const [mode, port, name, holdMs] = process.argv.slice(2);
const say = (event, extra = {}) =>
  console.log(JSON.stringify({ event, t_ns: process.hrtime.bigint().toString(), ...extra }));

const redisson = new Redisson({ redis: { options: { host: '127.0.0.1', port: Number(port) } } });
const lock = redisson.getLock(name);
if (mode === 'hold') {
  await lock.lock(30000);
  say('locked');
  await new Promise((r) => setTimeout(r, Number(holdMs)));
  await lock.unlock();
  say('released');
} else {
  say('tried', { held: await lock.tryLock(0, 30000) });
  await lock.lock(30000);
  say('locked');
  await lock.unlock();
}
await redisson.quit();
// node-redisson leaves the timer of a wait that a message ended running: exit without waiting for it.
process.exit(0);
