// EtcdLock when etcd has expired the client's lease before the client noticed (a partition longer
// than the lease's TTL, found by the service's test/partitions scenario d1): the next acquisition puts a key on a
// lease the server no longer has. It must answer LockUnavailableError (never etcd3's own error, which
// the service answered 500) and drop the lease, so the acquisition after it works on a new one.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { EtcdServer } from '../../../../harness/etcd-server.ts';
import { EtcdLock, LockUnavailableError } from '../../src/index.ts';

const run = promisify(execFile);

/** Revokes every lease behind the clients' backs, as the server's expiry does. */
async function revokeAll(server: EtcdServer): Promise<number> {
  const ctl = (...args: string[]) => run('etcdctl', ['--endpoints', server.endpoint, ...args]);
  const ids = (await ctl('lease', 'list')).stdout.split('\n').filter((l) => /^[0-9a-f]+$/.test(l.trim()));
  for (const id of ids) await ctl('lease', 'revoke', id.trim());
  return ids.length;
}

describe('EtcdLock after the server expired its lease unnoticed', () => {
  let server: EtcdServer;
  let locks: EtcdLock;
  before(async () => {
    server = await EtcdServer.start();
    // A long TTL: the client's keep-alive (every TTL/3) does not notice the revocation in time.
    locks = await EtcdLock.connect({ endpoints: server.endpoint, leaseTtlSeconds: 60 });
  });
  after(async () => {
    await locks.close();
    await server.stop();
  });

  it('answers LockUnavailableError, then acquires on a new lease', async () => {
    const first = await locks.acquire('lease-expired', { waitMs: 1000 });
    await first.release();
    assert.ok((await revokeAll(server)) >= 1, 'the client had a lease');
    const failed = await locks.acquire('lease-expired', { waitMs: 1000 }).then(
      (hold) => hold.release().then(() => null),
      (err: unknown) => err,
    );
    assert.ok(failed instanceof LockUnavailableError, `expected LockUnavailableError, got ${String(failed)}`);
    const again = await locks.acquire('lease-expired', { waitMs: 1000 });
    assert.ok(again.token > first.token, 'a new key, on a new lease');
    await again.release();
  });
});
