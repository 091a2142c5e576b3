// Seed 004 (source document 004 of the design brief, not in this repository) builds a lock from SETNX with a timestamp
// value ("current Unix time + lock timeout + 1") and recovers a crashed holder's lock by comparing that
// timestamp with the clock. It shows the DEL + SETNX recovery is broken (C1 and C2 both get the lock)
// and recommends GETSET instead, calling the C3/C4 side effect (C3 overwrites C4's timestamp)
// negligible. Here a test-only naive client reproduces both, step by step with explicit awaits, and
// the same interleaving is then run against this library, which must grant the lock to one owner only.
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { until } from '../../../harness/async.ts';
import { type LockClient, type LockHandle, LockLostError, LockNotHeldError } from '../src/index.ts';
import { useLockServer } from './support/lock.ts';

const { server, admin, newClient } = useLockServer('the seed 004 tests');

/**
 * The naive scheme needs no Redis TTL at all: whether a lock is "expired" is decided only by the
 * timestamps stored in Redis and each client's clock. So the clock is a fake the test advances,
 * which makes every step exact (no sleeps, no flakiness).
 */
class FakeClock {
  constructor(public ms: number) {}
  advance(ms: number): number {
    this.ms += ms;
    return this.ms;
  }
}

/** Seed 004's SETNX/GET/DEL/GETSET lock, one Redis command per method, so tests can interleave clients. */
class NaiveClient {
  /** Until when this client believes it holds the lock (its own timestamp), or undefined. */
  believesUntil: number | undefined;
  private pending = 0;

  constructor(
    readonly label: string,
    private readonly redis: Redis,
    private readonly key: string,
    private readonly clock: FakeClock,
    private readonly timeoutMs: number,
  ) {}

  /** `timestamp = current Unix time + lock timeout + 1`, computed at the top of the seed's loop. */
  nextTimestamp(): number {
    this.pending = this.clock.ms + this.timeoutMs + 1;
    return this.pending;
  }

  /** `SETNX lock.foo timestamp`: true when it took the lock. */
  async setnx(): Promise<boolean> {
    const ok = (await this.redis.setnx(this.key, String(this.pending))) === 1;
    if (ok) this.believesUntil = this.pending;
    return ok;
  }

  /** `GET lock.foo`, blank or non-numeric read as 0 (the seed's Java code does the same). */
  async get(): Promise<number> {
    return parseStamp(await this.redis.get(this.key));
  }

  expired(stamp: number): boolean {
    return this.clock.ms > stamp;
  }

  async del(): Promise<void> {
    await this.redis.del(this.key);
  }

  /** `GETSET lock.foo timestamp`: took the lock when the previous value was expired. */
  async getset(): Promise<boolean> {
    const previous = parseStamp(await this.redis.getset(this.key, String(this.pending)));
    const ok = this.expired(previous);
    if (ok) this.believesUntil = this.pending;
    return ok;
  }

  /** Does this client think it may run its critical section now? */
  holds(): boolean {
    return this.believesUntil !== undefined && this.clock.ms < this.believesUntil;
  }

  /** The seed's release: `if now() < GET lock.foo: DEL lock.foo`. */
  async release(): Promise<void> {
    if (this.clock.ms < (await this.get())) await this.del();
    this.believesUntil = undefined;
  }
}

function parseStamp(v: string | null): number {
  return v !== null && /^\d+$/.test(v) ? Number(v) : 0;
}

describe('seed 004, naive SETNX/timestamp lock (test-only reproduction)', () => {
  it('DEL + SETNX recovery: C1 and C2 both get the lock (double grant) under the seed’s interleaving', async () => {
    const key = 'naive:del-setnx';
    const clock = new FakeClock(1_000_000);
    const naive = (label: string) => new NaiveClient(label, server.client(), key, clock, 5000);
    const [c0, c1, c2] = [naive('C0'), naive('C1'), naive('C2')];

    c0.nextTimestamp();
    assert.equal(await c0.setnx(), true, 'C0 takes the lock');
    clock.advance(6000); // "C0 操作超時了,但它還持有著鎖": its timestamp is past, it never released

    // C1 and C2 read the lock, check the timestamp, and find one after the other that it expired.
    c1.nextTimestamp();
    c2.nextTimestamp();
    assert.equal(await c1.setnx(), false);
    assert.equal(await c2.setnx(), false);
    const seen1 = await c1.get();
    const seen2 = await c2.get();
    assert.ok(c1.expired(seen1) && c2.expired(seen2), 'both see C0’s timestamp as expired');

    await c1.del(); // C1 sends DEL lock
    assert.equal(await c1.setnx(), true, 'C1 sends SETNX lock and succeeds');
    await c2.del(); // C2 sends DEL lock — deleting C1's fresh lock
    assert.equal(await c2.setnx(), true, 'C2 sends SETNX lock and succeeds');

    assert.ok(c1.holds() && c2.holds(), 'double grant: C1 and C2 both believe they hold the lock');
    assert.ok(c0.holds() === false, 'C0 is past its own timestamp');
    assert.equal(await admin.get(key), String(c2.believesUntil), 'the key is C2’s; C1’s lock was deleted');

    // What it costs: a read-modify-write guarded by this "lock" loses an update.
    const counter = `${key}:count`;
    const v1 = Number((await admin.get(counter)) ?? 0); // C1 reads
    const v2 = Number((await admin.get(counter)) ?? 0); // C2 reads
    await admin.set(counter, v1 + 1); // C1 writes
    await admin.set(counter, v2 + 1); // C2 writes
    assert.equal(Number(await admin.get(counter)), 1, 'two guarded increments, one survives');
  });

  it('GETSET recovery: only C4 gets the lock, but C3 overwrote C4’s timestamp — C4 holds a lock whose expiry C3 set', async () => {
    const key = 'naive:getset';
    const clock = new FakeClock(2_000_000);
    const naive = (label: string, timeoutMs = 5000) =>
      new NaiveClient(label, server.client(), key, clock, timeoutMs);
    const [c0, c3, c4] = [naive('C0'), naive('C3'), naive('C4')];

    c0.nextTimestamp();
    assert.equal(await c0.setnx(), true);
    clock.advance(6000);

    const ts3 = c3.nextTimestamp(); // C3's loop starts first ...
    clock.advance(1);
    const ts4 = c4.nextTimestamp(); // ... C4's one millisecond later
    assert.equal(await c3.setnx(), false, 'C3: SETNX answered 0, C0 still holds');
    assert.equal(await c4.setnx(), false);
    assert.ok(c3.expired(await c3.get()), 'C3: GET shows C0’s lock expired');
    assert.ok(c4.expired(await c4.get()));
    assert.equal(await c4.getset(), true, 'C4 is one step ahead: GETSET returns C0’s expired stamp');
    assert.equal(await c3.getset(), false, 'C3: GETSET returns C4’s live stamp, so C3 did not get the lock');

    assert.ok(c4.holds() && !c3.holds(), 'exclusion holds: one grant');
    assert.equal(await admin.get(key), String(ts3), 'but the stored expiry is C3’s timestamp ...');
    assert.notEqual(ts3, ts4, '... not the one C4 believes in');
    assert.ok(ts3 < ts4, 'the lock now expires earlier than its holder thinks');
  });

  it('GETSET recovery, what "negligible" costs: with a shorter timeout at C3, C5 takes C4’s lock and C4’s release then frees C5’s', async () => {
    const key = 'naive:getset-cost';
    const clock = new FakeClock(3_000_000);
    const naive = (label: string, timeoutMs = 5000) =>
      new NaiveClient(label, server.client(), key, clock, timeoutMs);
    // C3 is a service configured with a 100 ms lock timeout; everybody else uses 5 s.
    const [c0, c3, c4, c5, c6] = [naive('C0'), naive('C3', 100), naive('C4'), naive('C5'), naive('C6')];

    c0.nextTimestamp();
    await c0.setnx();
    clock.advance(6000);
    const ts3 = c3.nextTimestamp();
    c4.nextTimestamp();
    assert.equal(await c3.setnx(), false);
    assert.equal(await c4.setnx(), false);
    assert.ok(c3.expired(await c3.get()));
    assert.ok(c4.expired(await c4.get()));
    assert.equal(await c4.getset(), true, 'C4 holds, believing it has 5 s');
    assert.equal(await c3.getset(), false, 'C3 loses, but leaves its 100 ms stamp on C4’s lock');
    assert.equal(await admin.get(key), String(ts3));

    clock.advance(200); // C4 is well inside its 5 s, but the stored stamp (C3's) has passed
    c5.nextTimestamp();
    assert.equal(await c5.setnx(), false);
    assert.ok(c5.expired(await c5.get()), 'C5 sees the lock as expired');
    assert.equal(await c5.getset(), true, 'C5 takes the lock');
    assert.ok(c4.holds() && c5.holds(), 'double grant: C4 and C5 both believe they hold it');

    // C4 finishes and runs the seed's careful release: "now < GET lock" is true (it is C5's stamp) ...
    await c4.release();
    assert.equal(await admin.exists(key), 0, '... so C4 deletes C5’s lock');
    c6.nextTimestamp();
    assert.equal(await c6.setnx(), true, 'and C6 takes it at once');
    assert.ok(c5.holds() && c6.holds(), 'double grant again: C5 and C6');
  });
});

describe('the same interleaving against this library', () => {
  const untilGone = (name: string) =>
    until(`${name} to expire`, async () => (await admin.exists(name)) === 0);

  it('C0’s lease lapses while it still thinks it works; C1 and C2 both observe it and attempt in the seed’s order: one holds, the stale C0 is refused and fenced', async () => {
    const name = 'seed004:steps';
    const [c0, c1, c2] = [newClient(), newClient(), newClient()];

    // C0 takes the lock with a short explicit lease: nobody renews it, and C0 never releases in time.
    const h0 = await c0.client.acquire(name, { leaseMs: 100 });
    await untilGone(name);
    assert.ok(h0.lost instanceof LockLostError, 'C0’s handle knows its lease lapsed');

    // C1 and C2 read the lock and find it expired (here: gone; the lease is Redis' own TTL).
    assert.equal(await c1.redis.pttl(name), -2);
    assert.equal(await c2.redis.pttl(name), -2);
    // "C1 DEL; C1 SETNX" — the one thing C1 can do is attempt.
    const g1 = await c1.client.tryAcquire(name, { leaseMs: 5000 });
    assert.ok(g1, 'C1 gets the lock');
    // "C2 DEL; C2 SETNX" — C2 can only attempt too, and the attempt is refused.
    const before = await admin.pttl(name);
    assert.equal(await c2.client.tryAcquire(name, { leaseMs: 60_000 }), null, 'C2 is refused');
    // Unlike C3's GETSET, C2's failed attempts leave C1's lock alone: same owner, no longer lease.
    assert.equal(await c2.client.tryAcquire(name, { leaseMs: 60_000, waitMs: 50 }), null);
    assert.deepEqual(await admin.hgetall(name), { [g1.owner]: '1' }, 'exactly one holder');
    const after = await admin.pttl(name);
    assert.ok(after <= before && after > 4000, `C1’s lease untouched by C2 (${before} → ${after})`);

    // The stale C0 wakes up and releases: refused, and C1's lock stays.
    await assert.rejects(h0.release(), LockNotHeldError);
    assert.deepEqual(await admin.hgetall(name), { [g1.owner]: '1' });
    assert.ok((await admin.pttl(name)) > 4000);
    // Fencing: anything C0 still writes carries a token lower than C1's.
    assert.ok(h0.token < g1.token, `C0 token ${h0.token} < C1 token ${g1.token}`);

    await g1.release();
    assert.equal(await admin.exists(name), 0);
  });

  it('C1 and C2 attempt at the same moment, many times over (watchdog stopped at C0): exactly one grant each round', async () => {
    const name = 'seed004:race';
    const [c1, c2] = [newClient(), newClient()];
    for (let round = 0; round < 30; round++) {
      // C0 holds under the watchdog, then stops renewing (its client is closed: a stalled process).
      const c0 = newClient({ watchdogLeaseMs: 60 });
      const h0 = await c0.client.acquire(name);
      await c0.client.close();
      await untilGone(name);

      const [g1, g2] = await Promise.all([
        c1.client.tryAcquire(name, { leaseMs: 5000 }),
        c2.client.tryAcquire(name, { leaseMs: 5000 }),
      ]);
      const winners = [g1, g2].filter((g): g is LockHandle => g !== null);
      assert.equal(winners.length, 1, `round ${round}: exactly one of C1, C2 holds`);
      const winner = winners[0] as LockHandle;
      assert.deepEqual(await admin.hgetall(name), { [winner.owner]: '1' });

      await assert.rejects(h0.release(), LockNotHeldError);
      assert.deepEqual(await admin.hgetall(name), { [winner.owner]: '1' }, 'stale release left it');
      assert.ok(h0.token < winner.token);
      await winner.release();
    }
  });

  it('C1 and C2 both wait (acquire) after C0’s lease lapsed: the second gets it only after the first released', async () => {
    const name = 'seed004:wait';
    const [c0, c1, c2] = [newClient(), newClient(), newClient()];
    const h0 = await c0.client.acquire(name, { leaseMs: 100 });
    await untilGone(name);

    const spans: Array<{ who: string; token: number; from: number; to: number }> = [];
    const work = async (who: string, client: LockClient) => {
      const h = await client.acquire(name, { leaseMs: 5000, waitMs: 5000 });
      const from = performance.now();
      assert.deepEqual(await admin.hgetall(name), { [h.owner]: '1' }, `${who} is the only holder`);
      await sleep(100); // a hold long enough that overlapping spans would show (the thing under test)
      const to = performance.now();
      spans.push({ who, token: h.token, from, to });
      await h.release();
    };
    await Promise.all([work('C1', c1.client), work('C2', c2.client)]);

    assert.equal(spans.length, 2);
    const [first, second] = spans as [(typeof spans)[0], (typeof spans)[0]];
    assert.ok(second.from >= first.to, 'no overlap between C1 and C2');
    assert.ok(h0.token < first.token && first.token < second.token, 'tokens: C0 < first < second');
    await assert.rejects(h0.release(), LockNotHeldError);
    assert.equal(await admin.exists(name), 0);
  });
});
