// The lock library's owner context (src/owner.ts): the owner is there for the whole async chain
// of a withOwner scope, nested scopes included, and the AsyncLocalStorage behind it is disabled once
// no scope runs, so it taxes no promise of the process between admin changes (an enabled one runs a
// hook on every promise). A chain that outlives its scope then sees no owner.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { currentOwner, withOwner } from '../src/owner.ts';

describe('lock owner context', () => {
  it('is there across awaits and in nested scopes, for each client', async () => {
    await withOwner('client-a', 'a:1', async () => {
      await sleep(2);
      assert.equal(currentOwner('client-a'), 'a:1');
      await withOwner('client-b', 'b:1', async () => {
        await sleep(2);
        assert.equal(currentOwner('client-a'), 'a:1');
        assert.equal(currentOwner('client-b'), 'b:1');
      });
      assert.equal(currentOwner('client-b'), undefined);
    });
  });

  it('is off once the last scope settled: a chain that outlives its scope sees no owner', async () => {
    let later: Promise<string | undefined> | undefined;
    let during: Promise<string | undefined> | undefined;
    await withOwner('client-c', 'c:1', async () => {
      later = (async () => {
        await sleep(30);
        return currentOwner('client-c');
      })();
      during = (async () => {
        await sleep(1);
        return currentOwner('client-c');
      })();
      await during;
    });
    assert.equal(await during, 'c:1');
    assert.equal(await later, undefined);
    // A scope that throws ends too, and the next one has its owner again.
    await assert.rejects(
      withOwner('client-c', 'c:2', async () => {
        throw new Error('boom');
      }),
      /boom/,
    );
    await withOwner('client-c', 'c:3', async () => {
      await sleep(1);
      assert.equal(currentOwner('client-c'), 'c:3');
    });
  });
});
