// Expected refusals (sold out, busy, rate limited, outside the window, over the limit) are built
// without a stack trace (packages/lock/src/coded-error.ts): under a herd thousands are made a second and
// nobody reads their stack. Faults keep theirs, and the process's stack limit is left as it was.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { UnavailableError } from '../src/errors.ts';
import { RateLimitedError } from '../src/http/errors.ts';
import { BusyError, NotStartedError, SaleEndedError, SoldOutError } from '../src/inventory/errors.ts';
import { LimitExceededError } from '../src/orders/errors.ts';

const frames = (err: Error) =>
  (err.stack ?? '').split('\n').filter((l) => l.trimStart().startsWith('at ')).length;

describe('refusal errors', () => {
  it('carry their code, details, name and message, and no stack frames', () => {
    const refusals: Error[] = [
      new SoldOutError('p1'),
      new BusyError('p1', 3),
      new NotStartedError('p1', Date.parse('2030-01-01T00:00:00Z')),
      new SaleEndedError('p1', Date.parse('2020-01-01T00:00:00Z')),
      new LimitExceededError('p1', 2),
      new RateLimitedError('user', 2),
    ];
    for (const err of refusals) assert.equal(frames(err), 0, `${err.name} has stack frames`);
    const soldOut = new SoldOutError('p1');
    assert.equal(soldOut.code, 'sold_out');
    assert.equal(soldOut.name, 'SoldOutError');
    assert.deepEqual(soldOut.details, { productId: 'p1', available: 0 });
    assert.match(soldOut.message, /sold out/);
    assert.ok(soldOut instanceof Error);
  });

  it('faults keep their stack, and the stack limit is restored', () => {
    const before = Error.stackTraceLimit;
    new SoldOutError('p1');
    assert.equal(Error.stackTraceLimit, before);
    const fault = new UnavailableError('Redis');
    assert.ok(frames(fault) > 0, 'a fault has its stack');
    assert.equal(fault.code, 'unavailable');
  });
});
