// The bad-input tests' world (http.bad-input*.test.ts): a private API over sales worth protecting, a
// snapshot of Redis and row counts before each test, and the checks that a refusal changed nothing.
import assert from 'node:assert/strict';
import { beforeEach } from 'node:test';
import { call, createSale, type Reply, reply } from '../../harness/service.ts';
import { type ApiOnly, startApiOnly } from './api-only.ts';
import { handle } from './handle.ts';
import { diffSnapshots, type RedisSnapshot, type SnapshotOptions, snapshotRedis } from './redis-snapshot.ts';
import { useInfra } from './suite.ts';

export const MAX_ORDER_QUANTITY = 100;
export const USER_ID = /^[A-Za-z0-9_.:@-]{1,128}$/;

/** Registers the suite's setup and per-test baseline; the returned functions use them lazily. */
export function useBadInput() {
  const { infra, setup, stopFirst } = useInfra();
  let api: ApiOnly | undefined;
  let baseline: RedisSnapshot;
  let baselineRows: { orders: number; audit: number };
  /** An order that exists (reserved), for GET /api/orders/:id. */
  let existingOrderId: string;

  async function rowCounts() {
    const r = await infra.pool.query<{ orders: number; audit: number }>(
      'select (select count(*)::int from orders) as orders, (select count(*)::int from admin_audit) as audit',
    );
    return r.rows[0] as { orders: number; audit: number };
  }

  /** Redis and Postgres exactly as before the refused requests (optionally ignoring some keys). */
  async function assertUnchanged(what: string, options: SnapshotOptions = {}) {
    const before = options.exclude ? new Map([...baseline].filter(([k]) => !options.exclude?.(k))) : baseline;
    const diff = diffSnapshots(before, await snapshotRedis(infra.client, options));
    assert.deepEqual(diff, [], `${what}: Redis changed`);
    assert.deepEqual(await rowCounts(), baselineRows, `${what}: Postgres rows changed`);
  }

  /** A refusal: the given status and code, a message, and never a 5xx or 202. */
  function assertRefused(r: Reply, status: number, code: string, context: string) {
    const detail = `${context} -> ${r.status} ${JSON.stringify(r.body)}`;
    assert.equal(r.status, status, detail);
    assert.equal(r.body.error, code, detail);
    assert.equal(typeof r.body.message, 'string', detail);
    assert.ok((r.body.message as string).length > 0, detail);
  }

  /** A request with full control over headers and body (no default content type). */
  async function raw(
    method: string,
    path: string,
    body: string | Uint8Array<ArrayBuffer> | undefined,
    headers: Record<string, string>,
  ) {
    return reply(await fetch(`${apiHandle.url}${path}`, { method, headers, body }));
  }

  setup(async () => {
    api = stopFirst(await startApiOnly(infra));
    const { url } = api;
    // Some state worth protecting: sales (one with a per-user limit, one sold out), reservations,
    // queued jobs, a remembered Idempotency-Key, buyer counters.
    for (const [id, spec] of [
      ['live', { stock: 50, shards: 4 }],
      ['limited', { stock: 10, shards: 2, perUserLimit: 2 }],
      ['gone', { stock: 1, shards: 1 }],
    ] as const) {
      await createSale(url, id, spec);
    }
    const o1 = await call(url, 'POST', '/api/orders', { productId: 'live', userId: 'alice', quantity: 2 });
    assert.equal(o1.status, 202);
    existingOrderId = o1.body.orderId as string;
    const o2 = await call(
      url,
      'POST',
      '/api/orders',
      { productId: 'limited', userId: 'bob' },
      { 'idempotency-key': 'known-key' },
    );
    assert.equal(o2.status, 202);
    assert.equal(
      (await call(url, 'POST', '/api/orders', { productId: 'gone', userId: 'carol' })).status,
      202,
    );
    assert.equal((await call(url, 'POST', '/api/orders', { productId: 'gone', userId: 'dan' })).status, 409);
  });

  // Each case compares against the state right before it, so one case's (reported) change does not
  // show up in every later case.
  beforeEach(async () => {
    baseline = await snapshotRedis(infra.client);
    baselineRows = await rowCounts();
    assert.ok(baseline.size > 20, `baseline has ${baseline.size} keys`);
  });
  const apiHandle = handle('api', () => api);
  return {
    infra,
    api: apiHandle,
    /** An order that exists (reserved), for GET /api/orders/:id. */
    existingOrderId: () => existingOrderId,
    assertUnchanged,
    assertRefused,
    raw,
  };
}
