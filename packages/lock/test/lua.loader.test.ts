// The Lua loader (src/lua.ts): `--- @include` expansion, the KEYS/ARGV header check of typed
// scripts against their declaration, and typed scripts run on a client and in a pipeline (EVALSHA with
// the EVAL fallback after SCRIPT FLUSH), against a private redis-server.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import type { Redis } from 'ioredis';
import { RedisServer } from '../../../harness/redis-server.ts';
import { FAMILY_SCRIPTS } from '../src/family-scripts.ts';
import { LuaScriptError, loadLua, luaHeader, typedScript } from '../src/lua.ts';
import { LOCK_SCRIPTS } from '../src/scripts.ts';

let dir: string;
let server: RedisServer;
let redis: Redis;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'flashsale-lua-'));
  server = await RedisServer.start();
  redis = server.client();
});
after(async () => {
  rmSync(dir, { recursive: true, force: true });
  await server.stop();
});

function write(path: string, text: string): URL {
  const full = join(dir, path);
  mkdirSync(join(full, '..'), { recursive: true });
  writeFileSync(full, text);
  return pathToFileURL(full);
}

describe('--- @include', () => {
  it('replaces include lines by the file, relative to the including file, recursively, each file once', () => {
    write('inc/c.lua', 'local C = 3\n');
    write('inc/b.lua', '--- @include "c.lua"\nlocal B = C + 2\n');
    const main = write('main.lua', '-- main\n--- @include "inc/b.lua"\n--- @include "inc/c.lua"\nreturn B\n');
    assert.equal(loadLua(main), '-- main\nlocal C = 3\nlocal B = C + 2\n\nreturn B\n');
  });

  it('rejects an include cycle', () => {
    write('cycle/x.lua', '--- @include "y.lua"\n');
    const y = write('cycle/y.lua', '--- @include "x.lua"\n');
    assert.throws(() => loadLua(y), LuaScriptError);
  });

  it('leaves no include line in any lock or inventory script, and every one compiles on Redis', async () => {
    for (const s of [...LOCK_SCRIPTS, ...FAMILY_SCRIPTS]) {
      assert.doesNotMatch(s.source, /^--- @include/m, s.name);
      assert.match(String(await redis.script('LOAD', s.source)), /^[0-9a-f]{40}$/, s.name);
    }
  });
});

describe('typed scripts', () => {
  const header = '-- KEYS[1] counter: a counter\n-- ARGV[1] by: increment\n-- ARGV[2] tag: echoed\n';
  const body = "return {redis.call('incrby', KEYS[1], ARGV[1]), ARGV[2]}\n";

  it('every lock script declares the KEYS/ARGV names its header documents', () => {
    for (const s of [...LOCK_SCRIPTS, ...FAMILY_SCRIPTS]) {
      assert.deepEqual(luaHeader(readFileSync(s.file, 'utf8')), { keys: s.keys, args: s.args }, s.name);
    }
  });

  it('refuses a declaration that differs from the header, and a header with a gap', () => {
    const file = write('typed/bump.lua', header + body);
    assert.throws(
      () => typedScript({ name: 'bumpWrong', file, keys: ['counter'], args: ['tag', 'by'] }),
      (err: unknown) => err instanceof LuaScriptError && /differ from the declaration/.test(err.message),
    );
    const gap = write('typed/gap.lua', '-- KEYS[1] a: x\n-- KEYS[3] c: y\nreturn 1\n');
    assert.throws(() => typedScript({ name: 'gap', file: gap, keys: ['a', 'c'], args: [] }), LuaScriptError);
  });

  it('runs with named input on a client and in a pipeline, also after SCRIPT FLUSH', async () => {
    const file = write('typed/bump.lua', header + body);
    const bump = typedScript({
      name: 'testBump',
      file,
      keys: ['counter'],
      args: ['by', 'tag'],
      parse: (reply) => (reply as [number, string])[0],
    });
    assert.deepEqual(bump.values({ by: 2, counter: 'n', tag: 't' }), ['n', 2, 't']);
    assert.equal(await bump.run(redis, { counter: 'n', by: 2, tag: 't' }), 2);
    await redis.script('FLUSH');
    assert.equal(await bump.run(redis, { counter: 'n', by: 3, tag: 't' }), 5, 'EVAL fallback');
    const pipeline = redis.pipeline();
    bump.run(pipeline, { counter: 'n', by: 1, tag: 'p' });
    pipeline.get('n');
    const replies = (await pipeline.exec()) ?? [];
    assert.deepEqual(replies, [
      [null, [6, 'p']],
      [null, '6'],
    ]);
    assert.equal(bump.parse(replies[0]?.[1]), 6);
  });

  it('refuses a pipeline whose client never had the script defined', () => {
    const file = write('typed/bump.lua', header + body);
    const other = typedScript({ name: 'testBumpUndefined', file, keys: ['counter'], args: ['by', 'tag'] });
    assert.throws(() => other.run(redis.pipeline(), { counter: 'n', by: 1, tag: 'x' }), LuaScriptError);
  });

  it('takes an optional trailing argument, or a list for the rest of ARGV, named in the header', async () => {
    const body = "return redis.call('rpush', KEYS[1], unpack(ARGV))\n";
    const optional = typedScript({
      name: 'testOptional',
      file: write(
        'typed/optional.lua',
        `-- KEYS[1] out: a list\n-- ARGV[1] head: x\n-- ARGV[2] tag?: y\n${body}`,
      ),
      keys: ['out'],
      args: ['head', 'tag?'],
    });
    assert.deepEqual(optional.values({ out: 'l', head: 'h', tag: 't' }), ['l', 'h', 't']);
    assert.deepEqual(optional.values({ out: 'l', head: 'h' }), ['l', 'h']);
    const list = typedScript({
      name: 'testList',
      file: write(
        'typed/list.lua',
        `-- KEYS[1] out: a list\n-- ARGV[1] head: x\n-- ARGV[2..] ...items: y\n${body}`,
      ),
      keys: ['out'],
      args: ['head', '...items'],
    });
    assert.equal(await list.run(redis, { out: 'tail-list', head: 'h', items: ['a', 'b'] }), 3);
    assert.equal(await optional.run(redis, { out: 'tail-list', head: 'i' }), 4);
    assert.deepEqual(await redis.lrange('tail-list', 0, -1), ['h', 'a', 'b', 'i']);
  });

  it('refuses an optional argument before a required one or a list, a list not last, a marked KEYS', () => {
    const cases: [string, string[], string[]][] = [
      ['-- KEYS[1] k: x\n-- ARGV[1] a?: x\n-- ARGV[2] b: y\n', ['k'], ['a?', 'b']],
      ['-- KEYS[1] k: x\n-- ARGV[1..] ...a: x\n-- ARGV[2] b: y\n', ['k'], ['...a', 'b']],
      ['-- KEYS[1] k: x\n-- ARGV[1] a?: x\n-- ARGV[2..] ...b: y\n', ['k'], ['a?', '...b']],
      ['-- KEYS[1] k?: x\n', ['k?'], []],
    ];
    for (const [i, [text, keys, args]] of cases.entries()) {
      const file = write(`typed/shape${i}.lua`, `${text}return 1\n`);
      assert.throws(() => typedScript({ name: `shape${i}`, file, keys, args }), LuaScriptError, text);
    }
  });
});
