// Lock-library errors become the inventory's coded errors (fromLockError), the same for an order's
// shard lock and an admin change's locks: busy for a timeout, unavailable for an unreachable service.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  LockAcquireTimeoutError,
  LockLostError,
  LockNotHeldError,
  LockQuorumUnavailableError,
  LockUnavailableError,
} from '@flashsale/lock';
import { UnavailableError } from '../src/errors.ts';
import { AdminLockLostError, BusyError } from '../src/inventory/errors.ts';
import { fromLockError, translatingLockErrors } from '../src/inventory/lock-errors.ts';

describe('fromLockError', () => {
  it('maps every lock failure to a coded service error, naming the lock service', () => {
    const busy = fromLockError(new LockAcquireTimeoutError('sale:{P}:admin', 30_000), 'P');
    assert.ok(busy instanceof BusyError);
    assert.equal(busy.code, 'busy');
    const down = fromLockError(
      new LockUnavailableError('stock:{P:1:0}:lock', new Error('x'), 'etcd'),
      'P',
      'etcd',
    );
    assert.ok(down instanceof UnavailableError);
    assert.equal(down.message, 'etcd is unavailable');
    const quorum = fromLockError(new LockQuorumUnavailableError('l', 1, 2, 3), 'P');
    assert.ok(quorum instanceof UnavailableError);
    for (const lost of [new LockLostError('l', 'lease lapsed'), new LockNotHeldError('l')]) {
      const err = fromLockError(lost, 'P');
      assert.ok(err instanceof AdminLockLostError);
      assert.equal(err.code, 'unavailable');
    }
  });

  it('leaves any other error as it is', async () => {
    const other = new Error('not a lock error');
    assert.equal(fromLockError(other, 'P'), other);
    await assert.rejects(
      translatingLockErrors('P', 'Redis', () => Promise.reject(new LockAcquireTimeoutError('l', 1))),
      BusyError,
    );
  });
});
