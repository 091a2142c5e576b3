// Scenario 7: property-based fuzzing (fast-check) of every endpoint with 10,000+ generated bad
// requests: malformed and mistyped bodies, out-of-range numbers, bad ids and headers, raw broken JSON,
// wrong content types, oversized bodies, missing/wrong admin tokens (with otherwise valid bodies),
// admin changes that must be refused, unknown routes and methods. Every answer must be a 4xx (never
// a 5xx, never a success), and neither Redis nor Postgres may change: every key (type and value)
// and every row are compared before and after. Lock bookkeeping that a refused admin change leaves
// (unlock latches that expire, fencing-token counters) is reported apart, not as a change of data.
// The seed is printed; FAULTS_SEED=<n> replays a run.
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import {
  adminHeaders,
  check,
  emptyResult,
  type FaultInfra,
  log,
  putSale,
  randomId,
  request,
  type ScenarioResult,
  Targets,
  withFaultInfra,
} from './lib.ts';

const RUNS = 10_000;
const CONCURRENCY = 32;
const MAX_QUANTITY = 100; // the service's MAX_ORDER_QUANTITY default
const STOCK = 500;

interface Case {
  kind: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  /** A string is sent as is (raw); anything else as JSON. */
  body?: unknown;
}

// --- validity, mirrored from src/http/validation.ts: the generators only keep invalid requests ---
const PRODUCT_RE = /^[A-Za-z0-9_-]{1,64}$/;
const USER_RE = /^[A-Za-z0-9_.:@-]{1,128}$/;
const KEY_RE = /^[A-Za-z0-9_.:@-]{1,200}$/;
const isInt = (v: unknown, min: number, max: number) =>
  typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
/** What JSON.stringify turns the value into, as the server sees it. */
const jsonRoundTrip = (v: unknown): unknown => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));

function validOrderBody(b: unknown): b is { productId: string } {
  if (typeof b !== 'object' || b === null || Array.isArray(b)) return false;
  const o = b as Record<string, unknown>;
  return (
    typeof o.productId === 'string' &&
    PRODUCT_RE.test(o.productId) &&
    typeof o.userId === 'string' &&
    USER_RE.test(o.userId) &&
    (o.quantity === undefined || isInt(o.quantity, 1, MAX_QUANTITY))
  );
}

function validSaleBody(b: unknown): boolean {
  if (typeof b !== 'object' || b === null || Array.isArray(b)) return false;
  const o = b as Record<string, unknown>;
  return (
    isInt(o.stock, 0, 1e9) &&
    isInt(o.shards, 1, 1024) &&
    (o.perUserLimit === undefined || o.perUserLimit === null || isInt(o.perUserLimit, 0, 1e9))
  );
}

// --- arbitraries ---
const anyString = fc.string({ unit: 'binary', maxLength: 80 });
const badProductId = fc.oneof(
  fc.constant(''),
  fc.string({ minLength: 65, maxLength: 90, unit: fc.constantFrom('a', 'B', '7', '_') }),
  anyString.filter((s) => !PRODUCT_RE.test(s)),
  fc.constantFrom('a b', 'p{1}', 'p:x', 'p.q', '../admin', 'p%00', 'p\u0000', 'ü', '{', '}', '*'),
);
const unknownProductId = fc.stringMatching(/^zz[A-Za-z0-9_-]{1,40}$/);
const badUserId = fc.oneof(
  fc.constant(''),
  fc.string({ minLength: 129, maxLength: 140, unit: fc.constantFrom('u', '1') }),
  anyString.filter((s) => !USER_RE.test(s)),
  fc.constantFrom('u{x}', 'a b', 'u\n', '{P:1}'),
);
const badNumber = fc.oneof(
  fc.integer({ min: -1_000_000, max: 0 }),
  fc.integer({ min: MAX_QUANTITY + 1, max: 2 ** 31 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }).filter((d) => !Number.isInteger(d)),
  fc.constantFrom(1e30, -1e30, 2 ** 53, 0.5, -0, Number.MAX_VALUE),
  fc.constantFrom('1', '8', '', 'NaN', '1e3', ' 1'),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 4 }), fc.integer(), { maxKeys: 2 }),
);
const anyValue = fc.oneof(fc.jsonValue({ maxDepth: 2 }), badNumber);
const goodUserId = fc.stringMatching(/^[A-Za-z0-9_.:@-]{1,20}$/);
const goodKey = fc.stringMatching(/^[A-Za-z0-9_.:@-]{1,40}$/);
const badKey = fc.oneof(
  fc.string({ minLength: 201, maxLength: 220, unit: fc.constantFrom('k', '2') }),
  fc.string({ minLength: 1, maxLength: 40, unit: 'binary-ascii' }).filter(
    // Headers cannot carry control characters; what is left must still be an invalid key.
    (s) => !KEY_RE.test(s) && /^[\x20-\x7e]+$/.test(s) && s.trim() === s,
  ),
  fc.constantFrom('a b', 'k{1}', 'k/1', 'k,1', '{'),
);
const wrongAuth = fc.oneof(
  fc.constant<Record<string, string>>({}),
  fc.constantFrom<Record<string, string>>(
    { authorization: 'Bearer wrong-token' },
    { authorization: 'Bearer ' },
    { authorization: 'Basic dGVzdDp0ZXN0' },
    { authorization: 'bearer' },
    { authorization: `Bearer ${'x'.repeat(300)}` },
  ),
  fc
    .string({ minLength: 1, maxLength: 60, unit: 'binary-ascii' })
    .filter((s) => /^[\x21-\x7e]+$/.test(s))
    .map((s) => ({ authorization: `Bearer ${s}` })),
);

function cases(existing: string): fc.Arbitrary<Case> {
  const orderField = (good: fc.Arbitrary<unknown>, bad: fc.Arbitrary<unknown>) =>
    fc.oneof({ arbitrary: good, weight: 3 }, { arbitrary: bad, weight: 1 });
  // POST /api/orders, JSON bodies that must be refused (or name an unknown product).
  const orderBody = fc
    .oneof(
      fc.record(
        {
          productId: orderField(
            fc.oneof(fc.constant(existing), unknownProductId),
            fc.oneof(badProductId, anyValue),
          ),
          userId: orderField(goodUserId, fc.oneof(badUserId, anyValue)),
          quantity: orderField(fc.integer({ min: 1, max: MAX_QUANTITY }), badNumber),
          extra: fc.option(anyValue, { nil: undefined }),
        },
        { requiredKeys: [] },
      ),
      fc.jsonValue({ maxDepth: 2 }).filter((v) => typeof v !== 'object' || v === null || Array.isArray(v)),
      fc.array(fc.record({ productId: fc.constant(existing), userId: goodUserId }), { maxLength: 3 }),
    )
    .map(jsonRoundTrip)
    .filter((b) => !(validOrderBody(b) && b.productId === existing));
  const orders = fc.tuple(orderBody, fc.option(goodKey, { nil: undefined })).map(
    ([body, key]): Case => ({
      kind: 'POST /api/orders (bad body)',
      method: 'POST',
      path: '/api/orders',
      headers: key ? { 'idempotency-key': key } : {},
      // A string body is sent raw; a JSON string value must be sent quoted.
      body: typeof body === 'string' ? JSON.stringify(body) : body,
    }),
  );
  // A valid order for the sale, but a bad Idempotency-Key: refused before anything happens.
  const badKeyOrders = fc.tuple(goodUserId, badKey).map(
    ([userId, key]): Case => ({
      kind: 'POST /api/orders (bad Idempotency-Key)',
      method: 'POST',
      path: '/api/orders',
      headers: { 'idempotency-key': key },
      body: { productId: existing, userId },
    }),
  );
  const rawOrders = fc
    .oneof(
      fc.constantFrom(
        '{',
        '{"productId":',
        '[1,',
        'nul',
        '{"a":1}}',
        '\u0000',
        '{"productId":"x",}',
        "{'a':1}",
      ),
      fc.string({ maxLength: 50 }).filter((s) => {
        try {
          JSON.parse(s);
          return false;
        } catch {
          return true;
        }
      }),
    )
    .chain((raw) =>
      fc.constantFrom(
        { kind: 'POST /api/orders (broken JSON)', headers: { 'content-type': 'application/json' }, raw },
        {
          kind: 'POST /api/orders (text/plain)',
          headers: { 'content-type': 'text/plain' },
          raw: JSON.stringify({ productId: existing, userId: 'u1' }),
        },
        {
          kind: 'POST /api/orders (charset)',
          headers: { 'content-type': 'application/json; charset=latin1' },
          raw: JSON.stringify({ productId: existing, userId: 'u1' }),
        },
        {
          kind: 'POST /api/orders (too large)',
          headers: { 'content-type': 'application/json' },
          raw: JSON.stringify({ productId: existing, userId: 'u1', pad: 'x'.repeat(17_000) }),
        },
      ),
    )
    .map(
      (c): Case => ({ kind: c.kind, method: 'POST', path: '/api/orders', headers: c.headers, body: c.raw }),
    );
  const orderIdLike = fc.oneof(
    anyString,
    fc
      .tuple(
        fc.oneof(fc.constant(existing), unknownProductId),
        fc.nat(99),
        fc.nat(20),
        fc.stringMatching(/^[0-9a-f]{24}$/),
      )
      .map(([p, g, i, r]) => `${p}.${g}.${i}.${r}`),
  );
  const getOrder = orderIdLike
    .filter((s) => s.length > 0)
    .map(
      (id): Case => ({
        kind: 'GET /api/orders/:id',
        method: 'GET',
        path: `/api/orders/${encodeURIComponent(id)}`,
        headers: {},
      }),
    );
  const getProduct = fc
    .oneof(badProductId, unknownProductId)
    .filter((s) => s.length > 0)
    .map(
      (id): Case => ({
        kind: 'GET /api/products/:id',
        method: 'GET',
        path: `/api/products/${encodeURIComponent(id)}`,
        headers: {},
      }),
    );

  // Admin: without a valid token anything is refused (even valid changes of the real sale).
  const adminTarget = fc.oneof(
    fc.constant(existing),
    unknownProductId,
    badProductId.filter((s) => s.length > 0),
  );
  const adminEndpoint = fc.constantFrom(
    { method: 'PUT', suffix: '' },
    { method: 'POST', suffix: '/restock' },
    { method: 'POST', suffix: '/reshard' },
    { method: 'GET', suffix: '' },
    { method: 'GET', suffix: '/reconcile' },
  );
  const adminAnyBody = fc.oneof(
    fc.record({ stock: fc.nat(1000), shards: fc.integer({ min: 1, max: 16 }) }),
    fc.record({ delta: fc.integer({ min: -100, max: 100 }) }),
    fc.record({ shards: fc.integer({ min: 1, max: 16 }) }),
    anyValue,
  );
  const adminNoAuth = fc.tuple(adminTarget, adminEndpoint, adminAnyBody, wrongAuth).map(
    ([p, e, body, auth]): Case => ({
      kind: `admin ${e.method} (no/wrong token)`,
      method: e.method,
      path: `/admin/products/${encodeURIComponent(p)}${e.suffix}`,
      headers: auth,
      body: e.method === 'GET' ? undefined : body,
    }),
  );
  // With the token: bodies that must be refused, bad ids, and changes that must be refused.
  const saleBody = fc
    .record(
      {
        stock: orderField(fc.nat(1000), badNumber),
        shards: orderField(
          fc.integer({ min: 1, max: 16 }),
          fc.oneof(badNumber, fc.constantFrom(0, 1025, 100_000)),
        ),
        perUserLimit: orderField(
          fc.nat(5),
          fc.oneof(
            badNumber.filter((v) => v !== null),
            fc.constant(-1),
          ),
        ),
      },
      { requiredKeys: [] },
    )
    .map(jsonRoundTrip)
    .filter((b) => !validSaleBody(b));
  const put = fc.tuple(adminTarget, saleBody).map(
    ([p, body]): Case => ({
      kind: 'admin PUT (bad body)',
      method: 'PUT',
      path: `/admin/products/${encodeURIComponent(p)}`,
      headers: adminHeaders,
      body,
    }),
  );
  const restock = fc
    .oneof(
      // Mistyped or out-of-range deltas, on any product.
      fc.tuple(
        adminTarget,
        fc.oneof(
          badNumber.filter((v) => !isInt(v, -1e9, 1e9)),
          fc.constantFrom(1e9 + 1, -1e9 - 1),
        ),
      ),
      // Valid deltas on products that do not exist.
      fc.tuple(unknownProductId, fc.integer({ min: -10, max: 10 })),
      // Removing more than is left.
      fc.tuple(fc.constant(existing), fc.integer({ min: -1e9, max: -(STOCK + 1) })),
    )
    .map(
      ([p, delta]): Case => ({
        kind: 'admin restock (refused)',
        method: 'POST',
        path: `/admin/products/${encodeURIComponent(p)}/restock`,
        headers: adminHeaders,
        body: { delta },
      }),
    );
  const reshard = fc
    .oneof(
      fc.tuple(
        adminTarget,
        fc.oneof(
          badNumber.filter((v) => !isInt(v, 1, 1024)),
          fc.constantFrom(0, 1025),
        ),
      ),
      fc.tuple(unknownProductId, fc.integer({ min: 1, max: 8 })),
    )
    .map(
      ([p, shards]): Case => ({
        kind: 'admin reshard (refused)',
        method: 'POST',
        path: `/admin/products/${encodeURIComponent(p)}/reshard`,
        headers: adminHeaders,
        body: { shards },
      }),
    );
  const adminGet = fc
    .tuple(
      fc.oneof(
        badProductId.filter((s) => s.length > 0),
        unknownProductId,
      ),
      fc.constantFrom('', '/reconcile'),
    )
    .map(
      ([p, suffix]): Case => ({
        kind: 'admin GET (bad/unknown id)',
        method: 'GET',
        path: `/admin/products/${encodeURIComponent(p)}${suffix}`,
        headers: adminHeaders,
      }),
    );
  const unknownRoute = fc
    .tuple(
      fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH'),
      fc.oneof(
        fc.webPath(),
        fc.constantFrom('/api/orders', '/api/products', '/admin', '/admin/products', '/api/orders/x/y'),
      ),
    )
    .filter(([m, p]) => !isKnownRoute(m, p))
    .map(
      ([method, path]): Case => ({
        kind: 'unknown route/method',
        method,
        path: path.startsWith('/') ? path : `/${path}`,
        headers: {},
        body: method === 'GET' ? undefined : {},
      }),
    );
  return fc.oneof(
    { arbitrary: orders, weight: 30 },
    { arbitrary: badKeyOrders, weight: 5 },
    { arbitrary: rawOrders, weight: 6 },
    { arbitrary: getOrder, weight: 8 },
    { arbitrary: getProduct, weight: 6 },
    { arbitrary: adminNoAuth, weight: 15 },
    { arbitrary: put, weight: 10 },
    { arbitrary: restock, weight: 8 },
    { arbitrary: reshard, weight: 6 },
    { arbitrary: adminGet, weight: 3 },
    { arbitrary: unknownRoute, weight: 3 },
  );
}

function isKnownRoute(method: string, path: string): boolean {
  const p = path.split('?')[0] ?? '';
  if (/^\/(healthz|readyz|metrics)\/?$/.test(p)) return method === 'GET';
  if (/^\/api\/orders\/?$/.test(p)) return method === 'POST';
  if (/^\/api\/(orders|products)\/[^/]+\/?$/.test(p)) return method === 'GET';
  return /^\/admin\/products\//.test(p);
}

// --- snapshots ---
/** Key -> type and value; `expires` when the key has a TTL (it goes away by itself). */
type Snapshot = Map<string, { value: string; expires: boolean }>;

async function redisSnapshot(redis: Redis): Promise<Snapshot> {
  const snap: Snapshot = new Map();
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'COUNT', 1000);
    cursor = next;
    for (const key of keys) {
      const type = await redis.type(key);
      let value: unknown;
      if (type === 'string') value = await redis.get(key);
      else if (type === 'hash') value = Object.entries(await redis.hgetall(key)).sort();
      else if (type === 'list') value = await redis.lrange(key, 0, -1);
      else if (type === 'set') value = (await redis.smembers(key)).sort();
      else if (type === 'zset') value = await redis.zrange(key, 0, -1, 'WITHSCORES');
      else value = type;
      snap.set(key, { value: `${type}:${JSON.stringify(value)}`, expires: (await redis.pttl(key)) >= 0 });
    }
  } while (cursor !== '0');
  return snap;
}

async function pgSnapshot(infra: FaultInfra): Promise<string> {
  const r = await infra.pool.query(
    `select (select count(*) from orders) as orders,
            (select coalesce(md5(string_agg(id || ':' || quantity, ',' order by id)), '') from orders) as orders_md5,
            (select count(*) from admin_audit) as audit`,
  );
  return JSON.stringify(r.rows[0]);
}

function diff(before: Snapshot, after: Snapshot): string[] {
  const changed: string[] = [];
  for (const [k, v] of after) if (before.get(k)?.value !== v.value) changed.push(k);
  for (const k of before.keys()) if (!after.has(k)) changed.push(k);
  return changed;
}

/** Lock bookkeeping: fencing-token counters (never expire by design) and wait-queue entries. */
const isLockBookkeeping = (key: string) => /^(flashsale_lock__|redisson_)/.test(key);
/** The writer's BullMQ stalled-job checker marks its runs (every WRITER_STALLED_INTERVAL_MS): not data. */
const isQueueHousekeeping = (key: string) =>
  key === 'bull:orders:stalled-check' || key === 'bull:orders:stalled';

export async function fuzz(): Promise<ScenarioResult> {
  const result = emptyResult('7', 'fuzz: bad requests on every endpoint');
  const seed = Number(process.env.FAULTS_SEED ?? Math.floor(Math.random() * 2 ** 31));
  return withFaultInfra(result, {}, async (infra, procs) => {
    const main = await procs.spawn(infra, 'main', { LOG_LEVEL: 'warn' });
    const targets = new Targets([main.url]);
    const existing = randomId('s7');
    await putSale(targets, existing, { stock: STOCK, shards: 4, perUserLimit: 3 });
    // Let the admin change's audit row and lock releases settle before the snapshot.
    const redisBefore = await redisSnapshot(infra.client);
    const pgBefore = await pgSnapshot(infra);

    const generated = fc.sample(cases(existing), { numRuns: RUNS, seed });
    const statuses: Record<string, number> = {};
    const byKind: Record<string, Record<string, number>> = {};
    const bad: Array<{ c: Case; status: number | string; body?: unknown }> = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < generated.length) {
          const c = generated[next++] as Case;
          const o = await request(main.url, c.method, c.path, c.body, c.headers).catch((err: Error) => ({
            kind: 'noAnswer' as const,
            error: err.message,
            at: 0,
          }));
          const status = o.kind === 'answer' ? o.status : 'no answer';
          statuses[String(status)] = (statuses[String(status)] ?? 0) + 1;
          const k = byKind[c.kind] ?? {};
          byKind[c.kind] = k;
          k[String(status)] = (k[String(status)] ?? 0) + 1;
          if (typeof status !== 'number' || status < 400 || status >= 500) {
            bad.push({ c, status, body: o.kind === 'answer' ? o.body : o.error });
          }
        }
      }),
    );
    const redisAfter = await redisSnapshot(infra.client);
    const pgAfter = await pgSnapshot(infra);
    const changed = diff(redisBefore, redisAfter);
    const dataChanged = changed.filter((k) => !isLockBookkeeping(k) && !isQueueHousekeeping(k));
    // Lock bookkeeping a refused admin change leaves: unlock latches expire within seconds; what
    // stays is a shard's fencing-token counter created on its lock's first use (as an order would).
    const lockChanged = changed.filter(isLockBookkeeping);
    const lockPersistent = lockChanged.filter((k) => redisAfter.get(k)?.expires === false);

    result.sent = generated.length;
    result.accepted = bad.filter((b) => b.status === 202).length;
    result.rows = Number(JSON.parse(pgAfter).orders);
    result.noAnswer = statuses['no answer'] ?? 0;
    result.faults = `${generated.length} generated bad requests (seed ${seed}) over ${Object.keys(byKind).length} request kinds`;
    result.details = {
      seed,
      statuses,
      byKind,
      changedKeys: dataChanged.slice(0, 50),
      lockBookkeepingChanged: lockChanged.length,
      lockBookkeepingPersistent: lockPersistent,
    };
    const fivexx = bad.filter((b) => typeof b.status === 'number' && b.status >= 500);
    check(
      result,
      fivexx.length === 0,
      `${fivexx.length} requests answered 5xx, e.g. ${JSON.stringify(fivexx.slice(0, 3))}`,
    );
    const notClientError = bad.filter((b) => !(typeof b.status === 'number' && b.status >= 500));
    check(
      result,
      notClientError.length === 0,
      `${notClientError.length} bad requests were not answered 4xx, e.g. ${JSON.stringify(notClientError.slice(0, 3))}`,
    );
    check(result, pgAfter === pgBefore, `Postgres changed: ${pgBefore} -> ${pgAfter}`);
    check(
      result,
      dataChanged.length === 0,
      `${dataChanged.length} Redis keys changed or appeared: ${dataChanged.slice(0, 8).join(', ')}`,
    );
    if (lockPersistent.length > 0) {
      result.notes.push(
        `refused admin changes (e.g. restock below zero) still take the shard locks: ${lockPersistent.length} fencing-token counters created or bumped (${lockChanged.length - lockPersistent.length} more lock keys expire by themselves)`,
      );
    }
    log('7', `statuses ${JSON.stringify(statuses)}`);
  });
}
