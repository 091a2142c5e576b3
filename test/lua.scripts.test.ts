// The service's own Lua scripts on the lock package's loader: each expands to one include-free EVAL that
// compiles on Redis, and each typed script's declaration matches its file's KEYS/ARGV header.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { RedisServer } from '../harness/redis-server.ts';
import { INVENTORY_SCRIPTS } from '../src/inventory/scripts.ts';
import { luaHeader } from '../src/redis/lua.ts';

let server: RedisServer;
let redis: Redis;

before(async () => {
  server = await RedisServer.start();
  redis = server.client();
});
after(() => server.stop());

describe('the service scripts', () => {
  it('leave no include line, and every one compiles on Redis', async () => {
    for (const s of INVENTORY_SCRIPTS) {
      assert.doesNotMatch(s.source, /^--- @include/m, s.name);
      assert.match(String(await redis.script('LOAD', s.source)), /^[0-9a-f]{40}$/, s.name);
    }
  });

  it('declare the KEYS/ARGV names their headers document', () => {
    for (const s of INVENTORY_SCRIPTS) {
      assert.deepEqual(luaHeader(readFileSync(s.file, 'utf8')), { keys: s.keys, args: s.args }, s.name);
    }
  });
});
