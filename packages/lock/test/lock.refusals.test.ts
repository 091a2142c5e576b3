// A Redis that refuses to run a command for now (a replica after a failover, a cluster slot without a
// master, too few replicas for min-replicas-to-write) means "unavailable", never a bug: the lock
// answers LockUnavailableError and isConnectionError says so, for a plain command and inside a script.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { RedisServer } from '../../../harness/redis-server.ts';
import { LockClient, LockUnavailableError } from '../src/index.ts';
import { isConnectionError } from '../src/toolkit.ts';
import { unhandledRejections } from './support/lock.ts';

const servers: RedisServer[] = [];
const clients: LockClient[] = [];

after(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all(servers.map((s) => s.stop()));
  assert.deepEqual(unhandledRejections(), [], 'no unhandled rejection during the refusal tests');
});

async function server(args: string[] = []): Promise<RedisServer> {
  const s = await RedisServer.start({ args });
  servers.push(s);
  return s;
}

/** The error a command rejects with (it must reject). */
async function refusal(op: () => Promise<unknown>): Promise<unknown> {
  try {
    await op();
  } catch (err) {
    return err;
  }
  assert.fail('the command was not refused');
}

/** Servers refusing writes, each in its own way. */
async function refusingServers(): Promise<Array<{ why: string; server: RedisServer; reply: RegExp }>> {
  const master = await server();
  return [
    {
      why: 'a replica',
      server: await server(['--replicaof', '127.0.0.1', String(master.port)]),
      reply: /^READONLY/,
    },
    {
      why: 'a cluster node serving no slot',
      server: await server(['--cluster-enabled', 'yes']),
      reply: /^CLUSTERDOWN/,
    },
    {
      why: 'a master short of replicas',
      server: await server(['--min-replicas-to-write', '1']),
      reply: /^NOREPLICAS/,
    },
  ];
}

describe('a Redis refusing writes for now', () => {
  it('is unavailable for a command, a script and a lock acquisition', async () => {
    for (const { why, server: s, reply } of await refusingServers()) {
      const redis = s.client();
      const plain = await refusal(() => redis.set('k', '1'));
      assert.match(String((plain as Error).message), reply, why);
      assert.ok(isConnectionError(plain), `${why}: a plain write's refusal is unavailability`);
      const scripted = await refusal(() => redis.eval("return redis.call('set', KEYS[1], '1')", 1, 'k'));
      assert.ok(isConnectionError(scripted), `${why}: a script's refusal is unavailability`);
      const client = new LockClient(s.client());
      clients.push(client);
      const locked = await refusal(() => client.acquire('l', { waitMs: 200 }));
      assert.ok(locked instanceof LockUnavailableError, `${why}: ${String(locked)}`);
    }
  });

  it('is not confused with a request error', async () => {
    const redis = (await server()).client();
    const wrong = await refusal(() => redis.eval('return redis.call("nosuchcommand")', 0));
    assert.equal(isConnectionError(wrong), false);
  });
});
