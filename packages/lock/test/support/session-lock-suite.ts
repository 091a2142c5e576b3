// The tests every session-backed lock backend (etcd, ZooKeeper) passes, run against a private server:
// counter under contention, FIFO, re-entry, fencing, kill -9, lease/session loss, restart, abort.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { until } from '../../../../harness/async.ts';
import { killAtExit } from '../../../../harness/cleanup.ts';
import {
  LockAcquireTimeoutError,
  type LockEvent,
  type LockEventObserver,
  type LockHandle,
  LockLostError,
  LockUnavailableError,
  type SessionLock,
} from '../../src/index.ts';

/** A private server the suite can crash, hang and bring back. */
export interface TestServer {
  kill(): Promise<void>;
  restart(): Promise<void>;
  pause(): void;
  resume(): void;
  stop(): Promise<void>;
}

/** A lock client of the backend under test. */
export type TestLock = SessionLock<unknown> & {
  close(): Promise<void>;
  isLocked(name: string): Promise<boolean>;
};

export interface BackendUnderTest<S extends TestServer> {
  name: string;
  start(): Promise<S>;
  /** A client whose lease (etcd) or session (ZooKeeper) lasts ttlSeconds, reporting to onEvent. */
  connect(server: S, ttlSeconds: number, onEvent?: LockEventObserver): Promise<TestLock>;
  /** Keys or nodes under the lock: its holder and its waiters. */
  queued(server: S, name: string): Promise<number>;
  /** The endpoint a child process connects to. */
  endpoint(server: S): string;
  /** Deletes every key or node of the lock behind its holder's back (an operator's mistake). */
  deleteAll(server: S, name: string): Promise<void>;
  /** Deletes the lock's (empty) parent, if the backend has one (ZooKeeper). */
  dropParent?(server: S, name: string): Promise<void>;
}

export function sessionLockSuite<S extends TestServer>(backend: BackendUnderTest<S>): void {
  let server: S;
  const clients: TestLock[] = [];
  const connect = async (ttlSeconds = 10, onEvent?: LockEventObserver) => {
    const c = await backend.connect(server, ttlSeconds, onEvent);
    clients.push(c);
    return c;
  };
  const queued = (name: string, n: number, timeoutMs = 30_000) =>
    until(`${n} key(s) under ${name}`, async () => (await backend.queued(server, name)) === n, { timeoutMs });

  before(async () => {
    server = await backend.start();
  });
  after(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close().catch(() => {})));
    await server?.stop();
  });

  describe(`${backend.name}: mutual exclusion (the seeds' counter check)`, () => {
    for (const [n, rounds] of [
      [10, 20],
      [200, 1],
    ] as const) {
      it(`${n} clients increment a counter exactly, never overlapping`, async () => {
        const name = `counter-${n}`;
        const workers = await Promise.all(Array.from({ length: n }, () => connect()));
        let counter = 0;
        let inside = 0;
        let overlaps = 0;
        await Promise.all(
          workers.map(async (w) => {
            for (let i = 0; i < rounds; i++) {
              await w.withLock(name, { waitMs: 120_000 }, async () => {
                inside += 1;
                if (inside > 1) overlaps += 1;
                const v = counter;
                await new Promise((resolve) => setImmediate(resolve));
                counter = v + 1;
                inside -= 1;
              });
            }
          }),
        );
        assert.equal(overlaps, 0);
        assert.equal(counter, n * rounds);
        assert.equal(await backend.queued(server, name), 0, 'no key or node left behind');
        await Promise.all(workers.map((w) => w.close()));
      });
    }
  });

  describe(`${backend.name}: order, re-entry, fencing`, () => {
    it('waiters get the lock strictly in the order they queued', async () => {
      const name = 'fifo';
      const holder = await connect();
      const waiters = await Promise.all(Array.from({ length: 5 }, () => connect()));
      const held = await holder.acquire(name);
      const order: number[] = [];
      const done: Promise<void>[] = [];
      for (const [i, w] of waiters.entries()) {
        done.push(
          w.withLock(name, { waitMs: 60_000 }, () => {
            order.push(i);
          }),
        );
        await queued(name, i + 2);
      }
      await held.release();
      await Promise.all(done);
      assert.deepEqual(order, [0, 1, 2, 3, 4]);
    });

    it('re-entry per owner: nested withLock counts, keeps the token, and excludes other owners', async () => {
      const name = 'reentry';
      const a = await connect();
      const b = await connect();
      await a.withLock(name, {}, async (outer) => {
        assert.equal(outer.holdCount, 1);
        await a.withLock(name, {}, async (inner) => {
          assert.equal(inner.holdCount, 2);
          assert.equal(inner.token, outer.token);
          assert.equal(await b.tryAcquire(name), null);
          const other = await a.tryAcquire(name, { owner: 'another-owner' });
          assert.equal(other, null, 'another owner of the same client waits too');
        });
        assert.equal(await b.tryAcquire(name), null, 'still held by the outer hold');
      });
      const after = await b.tryAcquire(name);
      assert.ok(after, 'free once the outer hold is released');
      await after.release();
      assert.equal(await backend.queued(server, name), 0);
    });

    it('fencing tokens strictly increase across clients and acquisitions', async () => {
      const name = 'fence';
      const a = await connect();
      const b = await connect();
      const tokens: number[] = [];
      for (let i = 0; i < 10; i++) {
        const h = await (i % 2 ? a : b).acquire(name, { waitMs: 10_000 });
        tokens.push(h.token);
        await h.release();
        if (i === 4 && backend.dropParent) await backend.dropParent(server, name);
      }
      for (let i = 1; i < tokens.length; i++)
        assert.ok((tokens[i] as number) > (tokens[i - 1] as number), `${tokens}`);
    });

    it('tryAcquire never barges past a queued waiter, and a timed-out wait leaves nothing behind', async () => {
      const name = 'no-barging';
      const a = await connect();
      const b = await connect();
      const c = await connect();
      const held = await a.acquire(name);
      const waiting = b.acquire(name, { waitMs: 60_000 });
      await queued(name, 2);
      assert.equal(await c.tryAcquire(name, { waitMs: 50 }), null);
      await queued(name, 2);
      await held.release();
      await (await waiting).release();
      assert.equal(await backend.queued(server, name), 0);
    });

    it('reports acquisitions, hand-offs, time-outs and releases to onEvent (the lock metrics)', async () => {
      const name = 'events';
      const aEvents: LockEvent[] = [];
      const bEvents: LockEvent[] = [];
      const a = await connect(10, (e) => aEvents.push(e));
      const b = await connect(10, (e) => bEvents.push(e));
      const held = await a.acquire(name);
      assert.equal(await b.tryAcquire(name), null);
      const waiting = b.acquire(name, { waitMs: 60_000 });
      await queued(name, 2);
      await held.release();
      await (await waiting).release();
      // Per client, in the order it saw them (the two clients' events interleave as the network does).
      const shape = (e: LockEvent) => [e.type, e.name, e.type === 'acquired' ? e.handoff : null];
      assert.deepEqual(aEvents.map(shape), [
        ['acquired', name, false],
        ['released', name, null],
      ]);
      assert.deepEqual(bEvents.map(shape), [
        ['timeout', name, null],
        ['acquired', name, true],
        ['released', name, null],
      ]);
      for (const e of [...aEvents, ...bEvents])
        assert.ok((e.type === 'released' ? e.heldMs : e.waitMs) >= 0, JSON.stringify(e));
    });

    it('an aborted wait rejects with the reason and removes its key or node', async () => {
      const name = 'abort';
      const a = await connect();
      const b = await connect();
      const held = await a.acquire(name);
      const ctl = new AbortController();
      const waiting = b.acquire(name, { waitMs: 60_000, signal: ctl.signal });
      await queued(name, 2);
      ctl.abort(new Error('caller gave up'));
      await assert.rejects(waiting, /caller gave up/);
      await queued(name, 1);
      await held.release();
    });
  });

  describe(`${backend.name}: failures`, () => {
    it('a holder killed with kill -9 is replaced once its lease or session runs out', async () => {
      const name = 'killed-holder';
      const child = spawn(
        process.execPath,
        [
          '--import',
          'tsx',
          'packages/lock/test/support/session-lock-holder.ts',
          backend.name,
          backend.endpoint(server),
          name,
          '2',
        ],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      const forget = child.pid ? killAtExit(child.pid, 'session-lock-holder') : () => {};
      let out = '';
      child.stdout?.on('data', (d) => {
        out += String(d);
      });
      await until('the child holds the lock', () => /held (\d+)/.exec(out), { timeoutMs: 60_000 });
      const childToken = Number(/held (\d+)/.exec(out)?.[1]);
      const b = await connect();
      const waiting = b.acquire(name, { waitMs: 60_000 });
      await queued(name, 2);
      child.kill('SIGKILL');
      forget();
      const h = await waiting;
      assert.ok(h.token > childToken, 'the new holder has a newer fencing token');
      await h.release();
    });

    it('server restarted while a waiter waits: it still gets the lock, never while the holder has it', async () => {
      const name = 'restart';
      const a = await connect();
      const b = await connect();
      const held = await a.acquire(name);
      let released = false;
      // Never two holders: the waiter gets the lock only once the holder released it, or once the
      // holder's hold was lost (its session did not survive the restart) and its signal said so.
      const waiting = b.acquire(name, { waitMs: 120_000 }).then((h) => {
        assert.ok(released || held.signal.aborted, 'the waiter got the lock while the holder still had it');
        return h;
      });
      await queued(name, 2);
      await server.restart();
      await until('the holder reaches the server again', () => a.isLocked(name).catch(() => false), {
        timeoutMs: 60_000,
      });
      released = true;
      await held.release().catch((err: unknown) => {
        if (!held.signal.aborted) throw err;
      });
      const h = await waiting;
      assert.ok(h.token > held.token);
      await h.release();
    });

    it('a hold whose key or node was deleted on the server aborts its signal', async () => {
      const name = 'deleted-key';
      const a = await connect(2);
      const h = await a.acquire(name);
      const { signal } = h;
      await backend.deleteAll(server, name);
      await until('the hold is reported lost', () => signal.aborted, { timeoutMs: 30_000 });
      assert.ok(signal.reason instanceof LockLostError, String(signal.reason));
      await assert.rejects(h.release());
    });

    // The server is paused (SIGSTOP) well within the clients' 30 s session, so a key or node the
    // abandoned call left would outlive the pause as a ghost: it must be gone within 10 s of the resume,
    // long before the session could take it.
    it('server unresponsive: a try answers unavailable, and its abandoned create leaves no entry', async () => {
      const name = 'unresponsive-create';
      const a = await connect(30);
      const b = await connect(30);
      server.pause();
      try {
        await assert.rejects(a.acquire(name, { waitMs: 300 }), LockUnavailableError);
      } finally {
        server.resume();
      }
      await queued(name, 0, 10_000);
      const h = await b.acquire(name, { waitMs: 10_000 });
      await h.release();
      await queued(name, 0);
    });

    it('server unresponsive while a waiter is queued: its wait times out, and its key or node goes', async () => {
      const name = 'unresponsive-queued';
      const a = await connect(30);
      const b = await connect(30);
      const held = await b.acquire(name);
      const waiting = a.acquire(name, { waitMs: 1500 });
      await queued(name, 2);
      server.pause();
      try {
        await assert.rejects(waiting, LockAcquireTimeoutError);
      } finally {
        server.resume();
      }
      await queued(name, 1, 10_000);
      await held.release();
      await queued(name, 0, 10_000);
      const c = await connect(30);
      const h = await c.acquire(name, { waitMs: 10_000 });
      await h.release();
    });

    it('lease or session loss aborts the holder’s signal (server hung past the TTL)', async () => {
      const name = 'lost';
      const a = await connect(2);
      const h: LockHandle = await a.acquire(name);
      const { signal } = h;
      server.pause();
      try {
        await until('the hold is reported lost', () => signal.aborted, { timeoutMs: 30_000 });
      } finally {
        server.resume();
      }
      assert.ok(signal.reason instanceof LockLostError, String(signal.reason));
      await assert.rejects(h.release());
      // The client recovers: a new acquisition works on a fresh lease or session.
      const again = await until(
        'a new acquisition',
        () => a.tryAcquire(name, { waitMs: 30_000 }).catch(() => null),
        {
          timeoutMs: 60_000,
        },
      );
      await again.release();
    });
  });
}
