// Live resharding and restocking under load (DESIGN.md §5): stock is conserved through every change,
// orders that picked a retired shard move to the new generation instead of being refused, and other
// API processes learn of a new generation by pub/sub or, failing that, by the retired answer.
import assert from 'node:assert/strict';
import { after, before, describe, it, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { SaleAdmin } from '../src/inventory/admin.ts';
import { LockClient, lockKeys } from '../src/lock/index.ts';
import { createOrderQueue } from '../src/orders/queue.ts';
import {
  admin,
  call,
  createSale,
  drained,
  type Spawned,
  spawnService,
  startInfra,
} from './support/service.ts';
import { useService } from './support/suite.ts';

const { infra, svc } = useService();

// --- helpers ---

type Body = Record<string, unknown>;

const reshard = (url: string, id: string, shards: unknown) =>
  call(url, 'POST', `/admin/products/${id}/reshard`, shards === undefined ? {} : { shards }, admin);
const restock = (url: string, id: string, delta: number) =>
  call(url, 'POST', `/admin/products/${id}/restock`, { delta }, admin);
const saleStatus = async (url: string, id: string) => {
  const r = await call(url, 'GET', `/admin/products/${id}`, undefined, admin);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body;
};
const reconcile = (url: string, id: string) =>
  call(url, 'GET', `/admin/products/${id}/reconcile`, undefined, admin);
const order = (url: string, productId: string, userId: string) =>
  call(url, 'POST', '/api/orders', { productId, userId });

/** Generation an order was reserved in: order ids are `<product>.<generation>.<index>.<random>`. */
const generationOf = (orderId: unknown) => Number(String(orderId).split('.')[1]);

/** Sum of a counter's samples whose labels include `match`, from a /metrics page. */
async function counter(url: string, name: string, match: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name}{`) && line.includes(match)) sum += Number(line.split(' ').at(-1));
  }
  return sum;
}

async function rowIds(productId: string): Promise<string[]> {
  const r = await infra.pool.query('select id from orders where product_id = $1', [productId]);
  return r.rows.map((row: { id: string }) => row.id);
}

/** Conservation at a quiescent point, from the service's own books and from Postgres. */
async function assertConserved(url: string, productId: string, accepted: string[]) {
  const s = await drained(url, productId, 60_000);
  assert.equal(
    Number(s.available) + Number(s.sold),
    s.total,
    `available + sold != total: ${JSON.stringify(s)}`,
  );
  assert.equal(s.sold, accepted.length, 'sold == accepted units (1 unit per order)');
  assert.equal(s.confirmed, accepted.length, 'confirmed == accepted');
  const ids = await rowIds(productId);
  assert.equal(ids.length, accepted.length, 'rows == accepted');
  const rows = new Set(ids);
  const missing = accepted.filter((id) => !rows.has(id));
  assert.deepEqual(missing, [], 'every 202 has its row');
  assert.equal(new Set(accepted).size, accepted.length, 'no order id answered twice');
  const rec = await reconcile(url, productId);
  assert.equal(rec.status, 200);
  assert.equal(rec.body.ok, true, JSON.stringify(rec.body));
  assert.equal(s.pending, null, 'every change switched: no journal left behind');
  return s;
}

interface Outcome {
  status: number;
  error?: string;
  orderId?: string;
  url: string;
  startedAt: number;
  finishedAt: number;
}

interface StormOptions {
  urls: string[];
  productId: string;
  inFlight: number;
  minOrders: number;
  /** Keep ordering (past minOrders) until this is true; checked before each new order. */
  until?: (outcomes: Outcome[]) => boolean;
  maxOrders?: number;
  /** Live progress, for whoever runs alongside (an admin pacing its changes). */
  progress?: { sent: number; outcomes: Outcome[] };
  /** Order i is sent only once the promise returned here (if any) has settled. */
  gate?: (i: number) => Promise<void> | undefined;
}

/** `inFlight` concurrent buyers, each ordering one unit at a time, alternating over the API processes. */
async function storm(o: StormOptions): Promise<{ outcomes: Outcome[]; ms: number }> {
  const progress = o.progress ?? { sent: 0, outcomes: [] };
  const { outcomes } = progress;
  const max = o.maxOrders ?? o.minOrders;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: o.inFlight }, async () => {
      for (;;) {
        const sent = progress.sent;
        if (sent >= max || (sent >= o.minOrders && (o.until === undefined || o.until(outcomes)))) break;
        const i = progress.sent++;
        await o.gate?.(i);
        const url = o.urls[i % o.urls.length] as string;
        const startedAt = Date.now();
        const r = await order(url, o.productId, `u${i}`);
        outcomes.push({
          status: r.status,
          error: typeof r.body.error === 'string' ? r.body.error : undefined,
          orderId: typeof r.body.orderId === 'string' ? r.body.orderId : undefined,
          url,
          startedAt,
          finishedAt: Date.now(),
        });
      }
    }),
  );
  return { outcomes, ms: performance.now() - t0 };
}

function tally(outcomes: Outcome[]): Record<string, number> {
  const t: Record<string, number> = {};
  for (const o of outcomes) {
    const k = `${o.status}${o.error ? ` ${o.error}` : ''}`;
    t[k] = (t[k] ?? 0) + 1;
  }
  return t;
}

const acceptedIds = (outcomes: Outcome[]) =>
  outcomes.filter((o) => o.status === 202).map((o) => o.orderId as string);

/** Only 202, 409 sold_out and 429 busy are acceptable answers during a storm; never a 5xx. */
function assertOnlyExpectedStatuses(outcomes: Outcome[]) {
  const t = tally(outcomes);
  const unexpected = Object.keys(t).filter((k) => !['202', '409 sold_out', '429 busy'].includes(k));
  assert.deepEqual(unexpected, [], `unexpected answers: ${JSON.stringify(t)}`);
  assert.equal(outcomes.filter((o) => o.status >= 500).length, 0, `5xx answers: ${JSON.stringify(t)}`);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

// --- tests ---

describe('live reshard and restock under an order storm', () => {
  it('≥ 2,000 orders, 300 in flight, 20 reshards (1..16 shards) and 2 restocks: conserved, nothing refused early', async (t: TestContext) => {
    // The service in its own process (API + writer, like `npm start`), so the load generator here
    // does not share its event loop.
    const main = await spawnService(infra, 'main');
    try {
      await stormWithAdmin(t, main.url);
    } finally {
      await main.stop();
    }
  });
});

async function stormWithAdmin(t: TestContext, url: string) {
  const P = 'storm-reshard';
  const INITIAL = 4000;
  const RESTOCK = 250;
  const SUPPLY = INITIAL + 2 * RESTOCK;
  await createSale(url, P, { stock: INITIAL, shards: 8 });

  const counts = [1, 16, 3, 8, 1, 12, 5, 16, 2, 7, 4, 16, 1, 9, 6, 13, 2, 10, 16, 4];
  const steps: Array<{ kind: 'reshard'; shards: number } | { kind: 'restock'; delta: number }> = [];
  counts.forEach((shards, i) => {
    steps.push({ kind: 'reshard', shards });
    // Both restocks early, while stock is certainly left (see the gate below).
    if (i === 1 || i === 4) steps.push({ kind: 'restock', delta: RESTOCK });
  });

  const progress = { sent: 0, outcomes: [] as Outcome[] };
  let adminDoneAt = Number.POSITIVE_INFINITY;
  // Pacing, both ways: admin step k starts once k·PER_STEP orders were sent, and order i waits (only
  // if the admin lags that far) until step ⌊i / PER_STEP⌋ − LAG is done. So every change starts while
  // units are selling with hundreds of orders in flight, and the storm cannot sell out first. It also
  // keeps fewer orders than the initial stock ahead of the restocks (steps 2 and 5), so each restock
  // lands while stock is left — the precondition of the timing check below.
  const PER_STEP = SUPPLY / 25;
  const LAG = 3;
  const stepDone = steps.map(() => {
    let resolve: () => void = () => {};
    const done = new Promise<void>((r) => {
      resolve = r;
    });
    return { done, resolve };
  });
  const adminLog: Array<{ kind: string; status: number; ms: number; body: Body; soldBefore: number }> = [];
  const adminRun = (async () => {
    try {
      for (const [k, step] of steps.entries()) {
        while (progress.sent < PER_STEP * k) await sleep(2);
        const soldBefore = progress.outcomes.filter((o) => o.status === 202).length;
        const t0 = performance.now();
        const r =
          step.kind === 'reshard' ? await reshard(url, P, step.shards) : await restock(url, P, step.delta);
        adminLog.push({
          kind: step.kind,
          status: r.status,
          ms: performance.now() - t0,
          body: r.body,
          soldBefore,
        });
        stepDone[k]?.resolve();
      }
    } finally {
      for (const s of stepDone) s.resolve();
      adminDoneAt = Date.now();
    }
  })();

  const { outcomes, ms } = await storm({
    urls: [url],
    productId: P,
    inFlight: 300,
    minOrders: SUPPLY + 100,
    maxOrders: 20_000,
    progress,
    gate: (i) => stepDone[Math.floor(i / PER_STEP) - LAG]?.done,
    // After the last admin change, go on until an order that started after it is told sold out.
    until: (os) => os.some((o) => o.error === 'sold_out' && o.startedAt >= adminDoneAt),
  });
  await adminRun;

  for (const a of adminLog) assert.equal(a.status, 200, `${a.kind}: ${JSON.stringify(a.body)}`);
  const reshards = adminLog.filter((a) => a.kind === 'reshard');
  assert.equal(reshards.length, 20);
  for (const [i, a] of reshards.entries()) assert.equal(a.body.shards, counts[i]);
  for (const a of adminLog.filter((x) => x.kind === 'restock')) {
    assert.ok(
      Number(a.body.available) > RESTOCK,
      `restock landed on an empty sale: ${JSON.stringify(a.body)}`,
    );
  }

  assertOnlyExpectedStatuses(outcomes);
  const accepted = acceptedIds(outcomes);
  assert.ok(accepted.length <= SUPPLY, `oversold: ${accepted.length} > ${SUPPLY}`);
  const busy = outcomes.filter((o) => o.status === 429).length;
  assert.ok(busy < outcomes.length * 0.05, `too many 429: ${busy} of ${outcomes.length}`);

  const s = await assertConserved(url, P, accepted);
  assert.equal(s.total, SUPPLY);
  // Demand exceeded supply: every unit was sold, none left on a shelf while buyers were refused.
  assert.equal(s.available, 0, JSON.stringify(s));
  assert.equal(accepted.length, SUPPLY);
  assert.equal(s.generation, 1 + 20 + 2, 'every reshard and restock made one generation');

  // Stock only fell after the restocks (which found stock left), so it stayed above 0 until the
  // last unit went. A sold-out answer is only right after that, so none may come back before the
  // last accepted order even started (reserved_at is taken before its decrement; same clock).
  const r = await infra.pool.query(
    'select (extract(epoch from max(reserved_at)) * 1000)::float8 as t from orders where product_id = $1',
    [P],
  );
  const lastReservedAt = Number(r.rows[0].t);
  const early = outcomes.filter((o) => o.error === 'sold_out' && o.finishedAt < lastReservedAt);
  assert.deepEqual(
    early.map((o) => ({ startedAt: o.startedAt, finishedAt: o.finishedAt })),
    [],
    `sold out answered while stock remained (last reservation at ${lastReservedAt})`,
  );

  const generations = new Set(accepted.map(generationOf));
  const reshardMs = reshards.map((a) => a.ms);
  const during = adminLog.filter((a) => a.soldBefore < SUPPLY).length;
  t.diagnostic(
    `storm: ${outcomes.length} orders in ${Math.round(ms)} ms = ${Math.round(outcomes.length / (ms / 1000))} orders/s; ` +
      `answers ${JSON.stringify(tally(outcomes))}; 429: ${busy} (${((100 * busy) / outcomes.length).toFixed(2)}%); ` +
      `units sold in ${generations.size} generations`,
  );
  t.diagnostic(
    `reshard ms (HTTP, incl. audit): median ${median(reshardMs).toFixed(0)}, max ${Math.max(...reshardMs).toFixed(0)}; ` +
      `${during} of ${adminLog.length} admin changes started while units were still selling`,
  );
  // Server side: the change itself (admin lock, shard locks, retire, switch), without HTTP and audit.
  const inLock = {
    sum: await counter(url, 'flashsale_admin_change_duration_seconds_sum', 'kind="reshard"'),
    count: await counter(url, 'flashsale_admin_change_duration_seconds_count', 'kind="reshard"'),
  };
  if (inLock.count > 0) {
    t.diagnostic(
      `reshard server-side (locks + change): mean ${((1000 * inLock.sum) / inLock.count).toFixed(0)} ms`,
    );
  }
  // The changes really happened under load: each started while units were selling, and units were
  // sold in many generations.
  assert.equal(during, adminLog.length, 'every change started before the sale sold out');
  assert.ok(generations.size >= 5, `units sold in only ${generations.size} generations`);
}

describe('reshard edge cases', () => {
  it('reshard to the same count: a new generation with the same stock, split evenly', async () => {
    const P = 'same-count';
    await createSale(svc.url, P, { stock: 103, shards: 4 });
    const accepted: string[] = [];
    for (let i = 0; i < 3; i++) accepted.push((await order(svc.url, P, `s${i}`)).body.orderId as string);
    const before = await saleStatus(svc.url, P);
    const r = await reshard(svc.url, P, 4);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body, {
      productId: P,
      shards: 4,
      generation: Number(before.generation) + 1,
      available: 100,
    });
    const s = await saleStatus(svc.url, P);
    assert.deepEqual(
      (s.shards as Body[]).map((x) => x.stock),
      [25, 25, 25, 25],
    );
    assert.deepEqual(
      (s.shards as Body[]).map((x) => x.key),
      [0, 1, 2, 3].map((i) => `stock:{${P}:${r.body.generation}:${i}}`),
    );
    assert.equal(s.sold, 3);
    assert.equal(s.total, 103);
    // The retired shards are gone; their stock is in the new generation only.
    assert.equal(await infra.client.exists(`stock:{${P}:${before.generation}:0}`), 0);
    await assertConserved(svc.url, P, accepted);
  });

  it('reshard with 0 stock: shards of 0, orders answered sold out, a restock sells again', async () => {
    const P = 'zero-stock';
    await createSale(svc.url, P, { stock: 2, shards: 2 });
    assert.equal((await order(svc.url, P, 'a')).status, 202);
    assert.equal((await order(svc.url, P, 'b')).status, 202);
    assert.equal((await order(svc.url, P, 'c')).body.error, 'sold_out');
    const r = await reshard(svc.url, P, 5);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.available, 0);
    assert.equal(r.body.shards, 5);
    const s = await saleStatus(svc.url, P);
    assert.deepEqual(
      (s.shards as Body[]).map((x) => x.stock),
      [0, 0, 0, 0, 0],
    );
    assert.equal(s.sold, 2);
    assert.equal(s.total, 2);
    assert.equal((await order(svc.url, P, 'd')).body.error, 'sold_out');
    // A sale created empty can be resharded too.
    await createSale(svc.url, 'zero-from-start', { stock: 0, shards: 3 });
    const z = await reshard(svc.url, 'zero-from-start', 1);
    assert.equal(z.status, 200);
    assert.deepEqual(z.body, { productId: 'zero-from-start', shards: 1, generation: 2, available: 0 });
    // The restock clears the sold-out flag: the next order is accepted.
    assert.equal((await restock(svc.url, P, 1)).status, 200);
    assert.equal((await order(svc.url, P, 'e')).status, 202);
    const rec = await reconcile(svc.url, P);
    assert.equal(rec.body.ok, true, JSON.stringify(rec.body));
  });

  it('reshard of an unknown product: 404 and nothing created', async () => {
    const r = await reshard(svc.url, 'ghost', 4);
    assert.equal(r.status, 404);
    assert.equal(r.body.error, 'unknown_product');
    assert.equal((await call(svc.url, 'GET', '/admin/products/ghost', undefined, admin)).status, 404);
    // Refused before any lock is taken: not even a lock key is left behind.
    assert.deepEqual(await infra.client.keys('*ghost*'), []);
    assert.equal((await restock(svc.url, 'ghost', 5)).status, 404);
    assert.equal((await restock(svc.url, 'ghost', -5)).status, 404);
    assert.deepEqual(await infra.client.keys('*ghost*'), []);
  });

  it('invalid shard counts (0, 1025, 2.5, "8", -1, null, missing, bad JSON): 400 and nothing changed', async () => {
    const P = 'invalid-count';
    await createSale(svc.url, P, { stock: 40, shards: 4 });
    await order(svc.url, P, 'x');
    await drained(svc.url, P);
    const snapshot = async () => ({
      status: await saleStatus(svc.url, P),
      list: await infra.client.lrange(`sale:{${P}}:shards`, 0, -1),
      hash: await infra.client.hgetall(`sale:{${P}}`),
    });
    const before = await snapshot();
    for (const shards of [0, 1025, 2.5, '8', -1, null, undefined, 1e9, true]) {
      const r = await reshard(svc.url, P, shards);
      assert.equal(r.status, 400, `shards=${JSON.stringify(shards)}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error, 'invalid_request');
      assert.match(String(r.body.message), /shards/);
    }
    const bad = await call(svc.url, 'POST', `/admin/products/${P}/reshard`, '{"shards": 8', admin);
    assert.equal(bad.status, 400);
    assert.equal((await reshard(svc.url, 'bad.id', 4)).status, 400);
    assert.deepEqual(await snapshot(), before);
    // The limits themselves are accepted.
    assert.equal((await reshard(svc.url, P, 1024)).status, 200);
    assert.equal((await saleStatus(svc.url, P)).available, 39);
    assert.equal((await reshard(svc.url, P, 1)).status, 200);
    const s = await saleStatus(svc.url, P);
    assert.deepEqual(
      (s.shards as Body[]).map((x) => x.stock),
      [39],
    );
  });
});

describe('concurrent admins', () => {
  it('two admins resharding at once: both finish, one after the other, state consistent', async () => {
    const P = 'two-admins';
    await createSale(svc.url, P, { stock: 500, shards: 4 });
    const g0 = Number((await saleStatus(svc.url, P)).generation);
    const [a, b] = await Promise.all([reshard(svc.url, P, 7), reshard(svc.url, P, 3)]);
    assert.equal(a.status, 200, JSON.stringify(a.body));
    assert.equal(b.status, 200, JSON.stringify(b.body));
    assert.deepEqual(new Set([a.body.generation, b.body.generation]), new Set([g0 + 1, g0 + 2]));
    const last = a.body.generation === g0 + 2 ? a : b;
    const s = await saleStatus(svc.url, P);
    assert.equal(s.generation, g0 + 2);
    assert.equal((s.shards as Body[]).length, last.body.shards);
    assert.equal(s.available, 500);
    assert.equal(a.body.available, 500);
    assert.equal(b.body.available, 500);
  });

  it('eight admin changes at once (reshards and restocks) under orders: all finish, totals add up', async () => {
    const P = 'many-admins';
    await createSale(svc.url, P, { stock: 1000, shards: 4 });
    const g0 = Number((await saleStatus(svc.url, P)).generation);
    const orders = storm({ urls: [svc.url], productId: P, inFlight: 50, minOrders: 400 });
    const changes = await Promise.all([
      reshard(svc.url, P, 2),
      restock(svc.url, P, 30),
      reshard(svc.url, P, 9),
      reshard(svc.url, P, 16),
      restock(svc.url, P, -20),
      reshard(svc.url, P, 1),
      restock(svc.url, P, 5),
      reshard(svc.url, P, 6),
    ]);
    const { outcomes } = await orders;
    for (const c of changes) assert.equal(c.status, 200, JSON.stringify(c.body));
    assert.equal(tally(outcomes)['409 sold_out'], undefined, 'stock was left all along: nobody is refused');
    assert.deepEqual(
      changes.map((c) => c.body.generation).sort((x, y) => Number(x) - Number(y)),
      Array.from({ length: 8 }, (_, i) => g0 + 1 + i),
    );
    assertOnlyExpectedStatuses(outcomes);
    const accepted = acceptedIds(outcomes);
    const s = await assertConserved(svc.url, P, accepted);
    assert.equal(s.total, 1000 + 30 - 20 + 5);
    assert.equal(s.generation, g0 + 8);
    assert.equal(s.available, 1015 - accepted.length);
  });

  it('a restock below 0 left is refused (409) and changes nothing', async () => {
    const P = 'restock-floor';
    await createSale(svc.url, P, { stock: 10, shards: 3 });
    const before = await saleStatus(svc.url, P);
    const r = await restock(svc.url, P, -11);
    assert.equal(r.status, 409);
    assert.equal(r.body.error, 'insufficient_stock');
    assert.deepEqual(await saleStatus(svc.url, P), before);
    const ok = await restock(svc.url, P, -10);
    assert.equal(ok.status, 200);
    assert.equal(ok.body.available, 0);
    assert.equal(ok.body.total, 0);
    assert.equal((await order(svc.url, P, 'u')).body.error, 'sold_out');
  });
});

describe('orders and retired shards', () => {
  it('an order waiting on a shard that a reshard retires moves to the new generation (202, not refused)', async () => {
    const P = 'moved-over';
    await createSale(svc.url, P, { stock: 10, shards: 1 });
    const g = Number((await saleStatus(svc.url, P)).generation);
    const retiredBefore = await counter(svc.url, 'flashsale_shard_attempts_total', 'outcome="retired"');
    // Hold the only shard's lock, so the admin queues for it first and the order queues behind it.
    const name = `stock:{${P}:${g}:0}:lock`;
    const locks = new LockClient(infra.redis.client());
    const held = await locks.acquire(name, { leaseMs: 10_000 });
    const queued = async (n: number) => {
      while ((await infra.client.zcard(lockKeys(name).queue)) < n) await sleep(5);
    };
    try {
      const resharding = reshard(svc.url, P, 3);
      await queued(1);
      const ordering = order(svc.url, P, 'patient');
      await queued(2);
      await held.release();
      const [r, o] = await Promise.all([resharding, ordering]);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(o.status, 202, JSON.stringify(o.body));
      assert.equal(generationOf(o.body.orderId), g + 1, 'reserved in the new generation');
    } finally {
      await locks.close();
    }
    const retiredAfter = await counter(svc.url, 'flashsale_shard_attempts_total', 'outcome="retired"');
    assert.ok(retiredAfter > retiredBefore, 'the order was told its shard was retired');
    const s = await drained(svc.url, P);
    assert.equal(s.available, 9);
    assert.equal(s.confirmed, 1);
  });

  it('reservations on retired shards stay valid: the writer and the sweeper persist them', async () => {
    // Own Redis and Postgres: no writer may run until the test starts one.
    const own = await startInfra();
    const api = await spawnService(own, 'api');
    let worker: Spawned | undefined;
    const P = 'retired-res';
    try {
      await createSale(api.url, P, { stock: 100, shards: 4 });
      const accepted: string[] = [];
      const placeSome = async (n: number, tag: string) => {
        for (let i = 0; i < n; i++) {
          const r = await order(api.url, P, `${tag}${i}`);
          assert.equal(r.status, 202, JSON.stringify(r.body));
          accepted.push(r.body.orderId as string);
        }
      };
      // No writer runs: the orders stay reservations on shards that then get retired.
      await placeSome(10, 'a');
      assert.equal((await reshard(api.url, P, 2)).status, 200);
      await placeSome(10, 'b');
      assert.equal((await restock(api.url, P, 5)).status, 200);
      await placeSome(10, 'c');
      assert.equal((await reshard(api.url, P, 3)).status, 200);
      const mid = await saleStatus(api.url, P);
      assert.equal(mid.reserved, 30);
      assert.equal(mid.sold, 30);
      assert.equal(Number(mid.available) + Number(mid.sold), 105);
      // A reservation on a retired shard still answers its status.
      const first = await call(api.url, 'GET', `/api/orders/${accepted[0]}`);
      assert.equal(first.body.status, 'reserved');
      // Lose the queued jobs for the first 20 (as if the API died before enqueueing them): only the
      // sweeper, reading the reservation hashes of retired shards, can bring those orders home.
      const queue = createOrderQueue(own.env.REDIS_URL as string);
      for (const id of accepted.slice(0, 20)) await queue.remove(id);
      await queue.close();
      worker = await spawnService(own, 'worker', { SWEEP_AGE_MS: '100', SWEEP_INTERVAL_MS: '100' });
      const s = await drained(api.url, P, 60_000);
      assert.equal(s.confirmed, 30);
      assert.equal(Number(s.available) + Number(s.sold), s.total);
      const rows = await own.pool.query('select id from orders where product_id = $1', [P]);
      assert.deepEqual(rows.rows.map((row: { id: string }) => row.id).sort(), [...accepted].sort());
      assert.equal((await reconcile(api.url, P)).body.ok, true);
      assert.equal((await call(api.url, 'GET', `/api/orders/${accepted[0]}`)).body.status, 'confirmed');
      assert.equal(
        await own.client.hlen(`stock:{${P}:1:0}:res`),
        0,
        'retired reservations are cleared once persisted',
      );
      assert.match(worker.output(), /sweeper re-enqueued/);
    } finally {
      await worker?.stop();
      await api.stop();
      await own.stop();
    }
  });
});

describe('several API processes', () => {
  let api1: Spawned;
  let api2: Spawned;
  let worker: Spawned;
  before(async () => {
    [api1, api2, worker] = await Promise.all([
      spawnService(infra, 'api'),
      spawnService(infra, 'api'),
      spawnService(infra, 'worker'),
    ]);
  });
  after(async () => {
    await Promise.all([api1?.stop(), api2?.stop(), worker?.stop()]);
  });

  it('orders through two API processes while both reshard: conserved, both follow every generation', async (t: TestContext) => {
    const P = 'multi-api';
    await createSale(api1.url, P, { stock: 3000, shards: 8 });
    let adminsDone = false;
    const windows: Array<{ from: number; to: number; shards: number }> = [];
    const admins = (async () => {
      const log: number[] = [];
      for (const [i, shards] of [4, 12, 1, 16, 6, 2, 9, 5].entries()) {
        await sleep(30);
        // Mostly through api1; every third change through api2, racing api1's next one.
        const url = i % 3 === 2 ? api2.url : api1.url;
        const from = Date.now();
        const changes = await Promise.all([
          reshard(url, P, shards),
          ...(i % 3 === 2 ? [reshard(api1.url, P, shards + 1)] : []),
        ]);
        windows.push({ from, to: Date.now(), shards: Number(changes.at(-1)?.body.shards) });
        for (const c of changes) {
          assert.equal(c.status, 200, JSON.stringify(c.body));
          log.push(Number(c.body.generation));
        }
      }
      return log;
    })().finally(() => {
      adminsDone = true;
    });
    // At least 2,000 orders, and on until the admins are done (staying below the 3,000 units).
    const { outcomes, ms } = await storm({
      urls: [api1.url, api2.url],
      productId: P,
      inFlight: 150,
      minOrders: 2000,
      maxOrders: 2900,
      until: () => adminsDone,
    });
    const gens = await admins;
    assertOnlyExpectedStatuses(outcomes);
    assert.equal(tally(outcomes)['409 sold_out'], undefined, 'stock was left all along: nobody is refused');
    const accepted = acceptedIds(outcomes);
    const s = await assertConserved(api1.url, P, accepted);
    assert.equal(s.total, 3000);
    assert.equal(s.available, 3000 - accepted.length);
    // Where the 429s fell: during an admin change, or while N shards were current.
    const busyOnes = outcomes.filter((o) => o.status === 429);
    const where: Record<string, number> = {};
    for (const o of busyOnes) {
      const during = windows.some((w) => o.startedAt <= w.to && o.finishedAt >= w.from);
      const current = windows.filter((w) => w.to <= o.startedAt).at(-1)?.shards ?? 8;
      const k = during ? 'during a change' : `${current} shards`;
      where[k] = (where[k] ?? 0) + 1;
    }
    t.diagnostic(
      `two API processes: ${outcomes.length} orders in ${Math.round(ms)} ms (${Math.round(outcomes.length / (ms / 1000))}/s), ` +
        `${windows.length} admin rounds; answers ${JSON.stringify(tally(outcomes))}; 429 by moment ${JSON.stringify(where)}`,
    );
    const busy = busyOnes.length;
    assert.ok(busy < outcomes.length * 0.05, `too many 429: ${busy} of ${outcomes.length}`);
    // Both processes took orders in several generations.
    for (const url of [api1.url, api2.url]) {
      const seen = new Set(
        outcomes.filter((o) => o.url === url && o.orderId).map((o) => generationOf(o.orderId)),
      );
      assert.ok(seen.size >= 3, `${url} only ordered in generations ${[...seen]}`);
    }
    // After the storm both processes order in the newest generation.
    for (const url of [api1.url, api2.url]) {
      const r = await order(url, P, `after-${url === api1.url ? 1 : 2}`);
      assert.equal(r.status, 202);
      assert.equal(generationOf(r.body.orderId), s.generation);
    }
    assert.equal(gens.length, 10);
  });

  it('the other process learns a new generation by pub/sub: no retired answer needed', async () => {
    const P = 'pubsub-learn';
    await createSale(api1.url, P, { stock: 100, shards: 2 });
    // Warm api2's cache for P.
    assert.equal((await order(api2.url, P, 'warm')).status, 202);
    const retired0 = await counter(api2.url, 'flashsale_shard_attempts_total', 'outcome="retired"');
    const r = await reshard(api1.url, P, 5);
    assert.equal(r.status, 200);
    await sleep(200);
    const o = await order(api2.url, P, 'next');
    assert.equal(o.status, 202);
    assert.equal(generationOf(o.body.orderId), r.body.generation);
    assert.equal(await counter(api2.url, 'flashsale_shard_attempts_total', 'outcome="retired"'), retired0);
  });

  it('without the event (pub/sub lost), the retired answer brings both processes to the new generation', async () => {
    const P = 'no-event';
    await createSale(api1.url, P, { stock: 100, shards: 3 });
    assert.equal((await order(api1.url, P, 'w1')).status, 202);
    assert.equal((await order(api2.url, P, 'w2')).status, 202);
    const before = await Promise.all(
      [api1, api2].map((a) => counter(a.url, 'flashsale_shard_attempts_total', 'outcome="retired"')),
    );
    // An admin whose announcements go nowhere: the API processes keep their cached shard lists.
    const silent = infra.redis.client();
    Object.assign(silent, { publish: async () => 0 });
    const lockRedis = infra.redis.client();
    const locks = new LockClient(lockRedis);
    try {
      const r = await new SaleAdmin(silent, locks).reshard(P, 4);
      for (const [k, a] of [api1, api2].entries()) {
        const o = await order(a.url, P, `after${k}`);
        assert.equal(o.status, 202, JSON.stringify(o.body));
        assert.equal(generationOf(o.body.orderId), r.sale.generation);
        const retired = await counter(a.url, 'flashsale_shard_attempts_total', 'outcome="retired"');
        assert.ok(retired > (before[k] ?? 0), 'learned by the retired answer');
      }
    } finally {
      await locks.close();
    }
    const s = await drained(api1.url, P);
    assert.equal(s.available, 96);
    assert.equal((await reconcile(api1.url, P)).body.ok, true);
  });
});
