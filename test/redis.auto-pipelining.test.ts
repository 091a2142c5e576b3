// Auto-pipelining on the request connection (src/boot/connect.ts) with the typed scripts: a script run
// in the same event-loop turn as other commands, on a client where it was never defined (or defined in
// that very turn), gets its reply, and so do the other commands. Before typedScript.run used EVALSHA,
// the first run defined the script on the client after the turn's auto-pipeline had been created:
// ioredis kept the callback but queued no command, and the exec crashed the process with
// `results[i] is not iterable` (the API under `npm run bench`).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import type { Redis } from 'ioredis';
import { RedisServer } from '../harness/redis-server.ts';
import { connectRedis } from '../src/boot/connect.ts';
import { duplicateClient, type RedisClient } from '../src/redis/connection.ts';
import { replyInt, typedScript } from '../src/redis/lua.ts';

let dir: string;
let server: RedisServer;
const clients: RedisClient[] = [];

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'flashsale-autopipe-'));
  server = await RedisServer.start();
});
after(async () => {
  for (const c of clients) c.disconnect();
  rmSync(dir, { recursive: true, force: true });
  await server.stop();
});

/** A script of its own (a name no client has defined yet): INCRBY on its key, answering the new value. */
function freshScript(name: string) {
  const file = join(dir, `${name}.lua`);
  writeFileSync(
    file,
    '-- KEYS[1] counter: the key\n-- ARGV[1] by: increment\nreturn redis.call("INCRBY", KEYS[1], ARGV[1])\n',
  );
  return typedScript({ name, file: pathToFileURL(file), keys: ['counter'], args: ['by'], parse: replyInt });
}

function autoPipelined(): Redis {
  const redis = server.client({ enableAutoPipelining: true });
  clients.push(redis);
  return redis;
}

describe('auto-pipelining with typed scripts', () => {
  it('a script never defined on the client, run in one turn with other commands: every reply arrives', async () => {
    const redis = autoPipelined();
    await redis.ping();
    const s = freshScript('autopipeFirstRun');
    const k = 'autopipe:{1}:n';
    // One turn: SET opens the turn's auto-pipeline, the script's first runs follow it. (A first run
    // meets NOSCRIPT and is sent again as EVAL, so the GET beside it may run before it: not asserted.)
    const replies = Promise.all([
      redis.set(k, '10'),
      s.run(redis, { counter: k, by: 1 }),
      redis.get(k),
      s.run(redis, { counter: k, by: 2 }),
    ]);
    assert.ok(
      redis.autoPipelineQueueSize >= 4,
      `queued in one auto-pipeline: ${redis.autoPipelineQueueSize}`,
    );
    const [set, first, , second] = await replies;
    assert.deepEqual([set, first, second], ['OK', 11, 13]);
    assert.equal(await redis.get(k), '13');
  });

  it('a script defined in the middle of a turn (as a pipeline user does) still runs in that turn', async () => {
    const redis = autoPipelined();
    await redis.ping();
    const s = freshScript('autopipeMidTurn');
    const k = 'autopipe:{2}:n';
    const first = redis.set(k, '0');
    s.define(redis);
    const runs = Array.from({ length: 20 }, () => s.run(redis, { counter: k, by: 1 }));
    await first;
    assert.deepEqual(
      (await Promise.all(runs)).sort((a, b) => a - b),
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
  });

  it('after SCRIPT FLUSH a run falls back to EVAL inside the auto-pipeline', async () => {
    const redis = autoPipelined();
    const s = freshScript('autopipeFlushed');
    const k = 'autopipe:{3}:n';
    assert.equal(await s.run(redis, { counter: k, by: 5 }), 5);
    await server.client().script('FLUSH');
    assert.deepEqual(await Promise.all([s.run(redis, { counter: k, by: 1 }), redis.get(k)]), [6, '5']);
  });

  it('the request connection auto-pipelines; its duplicates (subscriber, WAIT) do not', async () => {
    const redis = await connectRedis({ url: server.url }, 'autopipe-test');
    clients.push(redis);
    assert.equal(redis.options.enableAutoPipelining, true);
    const dup = duplicateClient(redis);
    clients.push(dup);
    assert.equal(dup.options.enableAutoPipelining, false);
  });
});
