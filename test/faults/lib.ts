// Shared machinery of the fault-injection scenarios: private infrastructure per scenario, child
// processes that are always reaped, a load generator that tells "refused" (never delivered, safe to
// send again) from "no answer" (delivered or not: ambiguous), and the end-of-run check of
// DESIGN.md §5 from the client's answers, the Postgres rows and the service's own accounting.
import { AsyncLocalStorage } from 'node:async_hooks';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import pg from 'pg';
import { until } from '../../harness/async.ts';
import type { Place } from '../../harness/child-server.ts';
import { PgCluster } from '../../harness/pg-cluster.ts';
import { createTestDatabase } from '../../harness/postgres.ts';
import { RedisServer } from '../../harness/redis-server.ts';
import {
  ADMIN_TOKEN,
  countRows,
  type Infra,
  type ServiceInfra,
  type Spawned,
  spawnService,
} from '../../harness/service.ts';
import { buyerKey } from '../../src/orders/keys.ts';

export { sleep };

// --- results -------------------------------------------------------------------------------------

export interface ScenarioResult {
  id: string;
  name: string;
  /** What was done to the system, in one line. */
  faults: string;
  /** Requests sent (logical orders, or requests for the fuzz). */
  sent: number;
  /** Distinct order ids the clients received in 202 answers. */
  accepted: number;
  /** Rows in Postgres for the scenario's product(s). */
  rows: number;
  /** 202s without a row. */
  lost: number;
  /** Order ids with more than one row, plus logical orders (one user, one key) with more than one row. */
  doubled: number;
  /** Rows no client saw a 202 for (allowed only for requests whose answer was lost). */
  orphans: number;
  /** Requests without a definite answer (connection cut, 5xx while a store was down). */
  noAnswer: number;
  /** Units sold beyond the stock put on sale. */
  oversold: number;
  ok: boolean;
  failures: string[];
  notes: string[];
  details: Record<string, unknown>;
  ms: number;
}

export function emptyResult(id: string, name: string): ScenarioResult {
  return {
    id,
    name,
    faults: '',
    sent: 0,
    accepted: 0,
    rows: 0,
    lost: 0,
    doubled: 0,
    orphans: 0,
    noAnswer: 0,
    oversold: 0,
    ok: true,
    failures: [],
    notes: [],
    details: {},
    ms: 0,
  };
}

export function fail(result: ScenarioResult, message: string): void {
  result.ok = false;
  result.failures.push(message);
}

export function check(result: ScenarioResult, condition: boolean, message: string): void {
  if (!condition) fail(result, message);
}

/** Progress lines on stderr, so the table on stdout stays clean. */
export function log(scenario: string, message: string): void {
  process.stderr.write(`[faults ${scenario}] ${message}\n`);
}

// --- infrastructure ------------------------------------------------------------------------------

export interface FaultInfra extends Infra {
  /** The private Postgres cluster, when the scenario asked for one (it may stop it). */
  pg?: PgCluster;
  /** Pool on the scenario's database for assertions (tolerates Postgres going away). */
  pool: pg.Pool;
}

export interface InfraOptions {
  /** Extra redis-server arguments, e.g. AOF settings. */
  redisArgs?: string[];
  /** A private Postgres cluster (initdb) instead of a fresh database on the shared server. */
  privatePostgres?: boolean;
  /** Server settings of the private cluster. */
  pgSettings?: Record<string, string>;
  env?: Record<string, string>;
}

/** Environment every fault scenario runs the service with: a fast sweeper, logs the harness reads. */
export const FAULT_ENV = {
  SWEEP_AGE_MS: '1000',
  SWEEP_INTERVAL_MS: '500',
  LOG_LEVEL: 'info',
} as const;

export async function startFaultInfra(options: InfraOptions = {}): Promise<FaultInfra> {
  const redis = await RedisServer.start({ args: options.redisArgs ?? [] });
  let cluster: PgCluster | undefined;
  let database: Infra['database'];
  try {
    if (options.privatePostgres) {
      const c = await PgCluster.start({ settings: options.pgSettings });
      cluster = c;
      database = { url: c.url, name: c.database, drop: () => c.destroy() };
    } else {
      database = await createTestDatabase();
    }
  } catch (err) {
    await redis.stop();
    throw err;
  }
  const env = {
    REDIS_URL: redis.url,
    DATABASE_URL: database.url,
    // A development run, as the tests: BUYER_AUTH none, the short test token.
    FLASHSALE_DEV_RUN: '1',
    ADMIN_TOKEN,
    ADMIN_AUTH_FAILURES: 'off',
    PORT: '0',
    HOST: '127.0.0.1',
    ...FAULT_ENV,
    ...options.env,
  };
  const pool = new pg.Pool({ connectionString: database.url, max: 2, connectionTimeoutMillis: 5000 });
  pool.on('error', () => {});
  let stopping: Promise<void> | undefined;
  const infra: FaultInfra = {
    redis,
    database,
    env,
    client: redis.client(),
    pg: cluster,
    pool,
    rows: (productId?: string) => countRows(pool, productId),
    stop() {
      stopping ??= (async () => {
        liveInfra.delete(infra);
        await pool.end().catch(() => {});
        await redis.stop().catch(() => {});
        await database.drop().catch(() => {});
      })();
      return stopping;
    },
  };
  liveInfra.set(infra, scenarioScope.getStore());
  return infra;
}

// --- child processes -----------------------------------------------------------------------------

/** The scenario the current async chain belongs to (scenarios may run side by side). */
export const scenarioScope = new AsyncLocalStorage<string>();
const live = new Map<Spawned, string | undefined>();
const liveInfra = new Map<FaultInfra, string | undefined>();
process.once('exit', () => {
  // The runner is going away (normally, on a signal, or after a scenario hung): never leave a
  // service process, a redis-server or a Postgres cluster behind.
  for (const s of live.keys())
    if (s.proc.exitCode === null && s.proc.signalCode === null) s.proc.kill('SIGKILL');
  for (const infra of liveInfra.keys()) {
    try {
      execFileSync('redis-cli', ['-p', String(infra.redis.port), 'shutdown', 'nosave'], {
        stdio: 'ignore',
        timeout: 3000,
      });
    } catch {
      // already gone
    }
    infra.pg?.destroySync();
  }
});

/** Stops every process and store a scenario left running (after it timed out). */
export async function reapScenario(id: string): Promise<void> {
  for (const [s, owner] of live) {
    if (owner === id && s.proc.exitCode === null && s.proc.signalCode === null) s.proc.kill('SIGKILL');
  }
  await Promise.all([...liveInfra].filter(([, owner]) => owner === id).map(([infra]) => infra.stop()));
}

/** Every process a scenario started; `reapAll` kills those still running. */
export class Processes {
  private readonly all: Spawned[] = [];
  /** Set by reapAll: nothing may be started any more (supervisors stop restarting). */
  closed = false;

  /** `place`: where it runs (a network namespace of test/partitions; default loopback). */
  async spawn(
    infra: ServiceInfra,
    entry: 'main' | 'api' | 'worker',
    env: Record<string, string> = {},
    place?: Place,
  ): Promise<Spawned> {
    if (this.closed) throw new Error('the scenario is over: no more processes');
    const s = await spawnService(infra, entry, { ...FAULT_ENV, ...env }, undefined, place);
    this.all.push(s);
    if (this.closed) await s.kill();
    live.set(s, scenarioScope.getStore());
    void new Promise((resolve) => s.proc.once('exit', resolve)).then(() => live.delete(s));
    return s;
  }

  /** Output of every process, for a failure report. */
  outputs(): string[] {
    return this.all.map((s) => s.output());
  }

  async reapAll(): Promise<void> {
    this.closed = true;
    await Promise.all(
      this.all.map(async (s) => {
        if (s.proc.signalCode === 'SIGSTOP' || s.proc.exitCode === null) s.proc.kill('SIGCONT');
        await s.kill();
      }),
    );
  }
}

/** A process that died on its own (not killed by the scenario). */
export interface Crash {
  entry: string;
  code: number | null;
  signal: string | null;
  /** The end of its output: the reason, usually a stack trace. */
  reason: string;
}

/** What a process printed after its last log line (Node's crash report), stack frames left out. */
export function crashReason(output: string): string {
  const lines = output.split('\n');
  let last = -1;
  lines.forEach((l, i) => {
    if (l.startsWith('{')) last = i;
  });
  return lines
    .slice(last + 1)
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('at ') && !l.startsWith('[...') && !l.startsWith('Node.js'))
    .join(' | ')
    .slice(0, 600);
}

/**
 * Restarts a service process whenever it dies on its own, like a process supervisor (systemd,
 * Kubernetes) would, and records each crash. A restart that fails (e.g. Postgres still down at boot)
 * is tried again every second.
 */
export class Supervised {
  readonly crashes: Crash[] = [];
  private stopped = false;

  private constructor(
    private readonly procs: Processes,
    private readonly infra: Infra,
    readonly entry: 'main' | 'api' | 'worker',
    private readonly env: Record<string, string>,
    private readonly onDown: () => void,
    private readonly onUp: (s: Spawned) => void,
    public current: Spawned,
  ) {
    this.watch(current);
  }

  static async start(
    procs: Processes,
    infra: Infra,
    entry: 'main' | 'api' | 'worker',
    env: Record<string, string> = {},
    hooks: { onDown?: () => void; onUp?: (s: Spawned) => void } = {},
  ): Promise<Supervised> {
    const first = await procs.spawn(infra, entry, env);
    return new Supervised(
      procs,
      infra,
      entry,
      env,
      hooks.onDown ?? (() => {}),
      hooks.onUp ?? (() => {}),
      first,
    );
  }

  /** No more restarts (call before the scenario reaps its processes). */
  stop(): void {
    this.stopped = true;
  }

  private watch(s: Spawned): void {
    s.proc.once('exit', (code, signal) => {
      if (this.stopped || this.procs.closed) return;
      this.crashes.push({ entry: this.entry, code, signal, reason: crashReason(s.output()) });
      log(this.entry, `${this.entry} process died (code ${code}, signal ${signal}); restarting it`);
      this.onDown();
      void this.respawn();
    });
  }

  private async respawn(): Promise<void> {
    while (!this.stopped && !this.procs.closed) {
      try {
        const s = await this.procs.spawn(this.infra, this.entry, this.env);
        if (this.stopped) return void (await s.kill());
        this.current = s;
        this.watch(s);
        this.onUp(s);
        log(this.entry, `${this.entry} process restarted`);
        return;
      } catch (err) {
        if (process.env.FAULTS_DEBUG)
          log(this.entry, `restart failed: ${(err as Error).message.slice(0, 300)}`);
        await sleep(1000);
      }
    }
  }
}

// --- HTTP ----------------------------------------------------------------------------------------

export type Outcome =
  | { kind: 'answer'; status: number; body: Record<string, unknown>; at: number }
  /** The request may or may not have reached the service (connection cut, timeout). */
  | { kind: 'noAnswer'; error: string; at: number };

/** Thrown when the connection was refused: the request never reached a process. */
export class RefusedError extends Error {}

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

/** One HTTP request; a refused connection throws RefusedError, any other failure is "no answer". */
export function request(
  url: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
  timeoutMs = 15_000,
): Promise<Outcome> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const payload =
      body === undefined ? undefined : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
    const req = http.request(
      `${url}${path}`,
      {
        method,
        agent,
        headers: {
          ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}),
          ...headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', (err) => resolve({ kind: 'noAnswer', error: err.message, at: started }));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: Record<string, unknown>;
          try {
            parsed = text ? (JSON.parse(text) as Record<string, unknown>) : {};
          } catch {
            parsed = { raw: text };
          }
          resolve({ kind: 'answer', status: res.statusCode ?? 0, body: parsed, at: started });
        });
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ECONNREFUSED') reject(new RefusedError(err.message));
      else resolve({ kind: 'noAnswer', error: `${err.code ?? ''} ${err.message}`.trim(), at: started });
    });
    if (payload) req.write(payload);
    req.end();
  });
}

export const adminHeaders = { authorization: `Bearer ${ADMIN_TOKEN}` };

/** API processes the load is spread over; a slot is down while its process is being restarted. */
export class Targets {
  private readonly urls: (string | null)[];
  private waiters: Array<() => void> = [];
  private cursor = 0;

  constructor(urls: string[]) {
    this.urls = [...urls];
  }

  down(slot: number): void {
    this.urls[slot] = null;
  }

  up(slot: number, url: string): void {
    this.urls[slot] = url;
    for (const w of this.waiters.splice(0)) w();
  }

  url(slot = 0): string | null {
    return this.urls[slot] ?? null;
  }

  /** A live URL, round-robin; waits while every slot is down. */
  async pick(): Promise<string> {
    for (;;) {
      const liveUrls = this.urls.filter((u): u is string => u !== null);
      if (liveUrls.length > 0) return liveUrls[this.cursor++ % liveUrls.length] as string;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }
}

/**
 * Sends until delivered: a refused connection (process down, never reached) is sent again once a
 * process is up; anything else is the outcome, answer or not.
 */
export async function deliver(
  targets: Targets,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
  timeoutMs = 15_000,
): Promise<Outcome> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const url = await targets.pick();
    try {
      return await request(url, method, path, body, headers, timeoutMs);
    } catch (err) {
      if (!(err instanceof RefusedError) || Date.now() > deadline) throw err;
      await sleep(20);
    }
  }
}

/** Admin GET of a product's status, retried while the service or its stores are recovering. */
export async function saleStatus(targets: Targets, productId: string): Promise<Record<string, unknown>> {
  let last: Outcome | null = null;
  return until(
    'the admin status',
    async () => {
      last = await deliver(targets, 'GET', `/admin/products/${productId}`, undefined, adminHeaders).catch(
        () => null,
      );
      return last?.kind === 'answer' && last.status === 200 ? last.body : undefined;
    },
    { timeoutMs: 60_000, everyMs: 200, describe: () => JSON.stringify(last) },
  );
}

export async function putSale(
  targets: Targets,
  productId: string,
  spec: { stock: number; shards: number; perUserLimit?: number; paymentTimeoutSec?: number },
): Promise<void> {
  const r = await deliver(targets, 'PUT', `/admin/products/${productId}`, spec, adminHeaders);
  if (r.kind !== 'answer' || (r.status !== 201 && r.status !== 200)) {
    throw new Error(`could not create sale ${productId}: ${JSON.stringify(r)}`);
  }
}

// --- load ----------------------------------------------------------------------------------------

export interface OrderSpec {
  userId: string;
  quantity: number;
  /** Idempotency-Key of this logical order (retries reuse it). */
  key?: string;
}

export interface OrderLog extends OrderSpec {
  i: number;
  attempts: Outcome[];
}

export interface LoadSpec {
  targets: Targets;
  productId: string;
  orders: number;
  concurrency: number;
  /** Orders per second across all clients; unpaced when absent. */
  ratePerSec?: number;
  order: (i: number) => OrderSpec;
  timeoutMs?: number;
}

/** Closed-loop load: `concurrency` clients, each sending one order at a time (optionally paced). */
export class Load {
  readonly logs: OrderLog[] = [];
  dispatched = 0;
  readonly startedAt = performance.now();
  private readonly progressWaiters: Array<{ n: number; resolve: () => void }> = [];
  readonly done: Promise<OrderLog[]>;

  constructor(private readonly spec: LoadSpec) {
    this.done = this.run();
  }

  /** Resolves once n orders have been dispatched (or the load ended). */
  reached(n: number): Promise<void> {
    if (this.dispatched >= n) return Promise.resolve();
    return new Promise((resolve) => this.progressWaiters.push({ n, resolve }));
  }

  private tick(): void {
    for (let k = this.progressWaiters.length - 1; k >= 0; k--) {
      const w = this.progressWaiters[k];
      if (w && this.dispatched >= w.n) {
        this.progressWaiters.splice(k, 1);
        w.resolve();
      }
    }
  }

  private async run(): Promise<OrderLog[]> {
    const { spec } = this;
    let next = 0;
    const client = async () => {
      while (next < spec.orders) {
        const i = next++;
        if (spec.ratePerSec) {
          const due = this.startedAt + (i * 1000) / spec.ratePerSec;
          const wait = due - performance.now();
          if (wait > 0) await sleep(wait);
        }
        const o = spec.order(i);
        const entry: OrderLog = { ...o, i, attempts: [] };
        this.logs.push(entry);
        this.dispatched += 1;
        this.tick();
        entry.attempts.push(await submitOrder(spec.targets, spec.productId, o, spec.timeoutMs));
        // A queued order follows the waiting room's protocol: back after retryAfterMs with its ticket.
        for (let tries = 0; tries < 40; tries++) {
          const queued = queuedTicket(entry.attempts.at(-1));
          if (!queued) break;
          await sleep(queued.retryAfterMs);
          entry.attempts.push(
            await submitOrder(spec.targets, spec.productId, o, spec.timeoutMs, queued.ticket),
          );
        }
      }
    };
    await Promise.all(Array.from({ length: spec.concurrency }, client));
    this.dispatched = Number.POSITIVE_INFINITY;
    this.tick();
    return this.logs;
  }
}

export function submitOrder(
  targets: Targets,
  productId: string,
  o: OrderSpec,
  timeoutMs?: number,
  ticket?: string,
): Promise<Outcome> {
  const body = { productId, userId: o.userId, quantity: o.quantity };
  const headers: Record<string, string> = o.key ? { 'idempotency-key': o.key } : {};
  if (ticket) headers['queue-ticket'] = ticket;
  return deliver(targets, 'POST', '/api/orders', body, headers, timeoutMs);
}

/** The waiting room's ticket of a `429 queued` answer, and how long to wait before coming back. */
export function queuedTicket(o: Outcome | undefined): { ticket: string; retryAfterMs: number } | undefined {
  if (o?.kind !== 'answer' || o.status !== 429 || o.body.error !== 'queued') return undefined;
  return { ticket: String(o.body.ticket), retryAfterMs: Number(o.body.retryAfterMs) };
}

/**
 * submitOrder as a well-behaved client does it: a `429 queued` answer is sent again with its ticket
 * after `retryAfterMs`, a `429 busy` after a short jittered pause, both with the same Idempotency-Key,
 * up to `tries` times. `last` is an earlier answer to go on from. Returns every outcome, the final one last.
 */
export async function submitShedRetried(
  targets: Targets,
  productId: string,
  o: OrderSpec,
  tries = 40,
  last?: Outcome,
): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  let ticket: string | undefined;
  for (let previous = last; ; ) {
    const queued = queuedTicket(previous);
    if (queued) ticket = queued.ticket;
    if (previous) await sleep(queued ? queued.retryAfterMs : 100 + Math.random() * 200);
    const outcome = await submitOrder(targets, productId, o, undefined, ticket);
    outcomes.push(outcome);
    const shed = outcome.kind === 'answer' && outcome.status === 429;
    if (!shed || outcomes.length >= tries) return outcomes;
    previous = outcome;
  }
}

/** An outcome after which the order may or may not exist. */
export function ambiguous(o: Outcome): boolean {
  return o.kind === 'noAnswer' || o.status >= 500;
}

/** Definite outcomes are final; a 202, a 4xx refusal. 429 busy and 409 in-progress are retryable. */
export function retryable(o: Outcome): boolean {
  if (ambiguous(o)) return true;
  if (o.kind !== 'answer') return true;
  return o.status === 429 || o.body.error === 'request_in_progress';
}

/**
 * Retries the logical orders whose last answer was not definite, with the same Idempotency-Key (as
 * a real client would), up to `rounds` times. Returns how many still have no definite answer.
 */
export async function retryUnanswered(
  targets: Targets,
  productId: string,
  logs: OrderLog[],
  rounds = 2,
  concurrency = 64,
): Promise<{ retried: number; stuck: OrderLog[] }> {
  let retried = 0;
  for (let round = 0; round < rounds; round++) {
    const todo = logs.filter((l) => l.key && retryable(l.attempts[l.attempts.length - 1] as Outcome));
    if (todo.length === 0) break;
    retried += todo.length;
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(concurrency, todo.length) }, async () => {
        while (next < todo.length) {
          const l = todo[next++] as OrderLog;
          const last = l.attempts[l.attempts.length - 1];
          // A queued order keeps its place (its ticket); a shed or unanswered one is simply sent again.
          if (queuedTicket(last))
            l.attempts.push(...(await submitShedRetried(targets, productId, l, 40, last)));
          else l.attempts.push(await submitOrder(targets, productId, l));
        }
      }),
    );
  }
  // Keys whose claim is still held by an attempt that will never finish.
  const stuck = logs.filter((l) => {
    const last = l.attempts[l.attempts.length - 1] as Outcome;
    return l.key && last.kind === 'answer' && last.body.error === 'request_in_progress';
  });
  return { retried, stuck };
}

// --- the end-of-run check ------------------------------------------------------------------------

export interface Tally {
  sent: number;
  acceptedIds: Set<string>;
  /** Attempts without a definite answer. */
  ambiguous: number;
  noAnswer: number;
  statuses: Record<string, number>;
}

export function tally(logs: OrderLog[]): Tally {
  const acceptedIds = new Set<string>();
  const statuses: Record<string, number> = {};
  let amb = 0;
  let noAnswer = 0;
  for (const l of logs) {
    for (const a of l.attempts) {
      const label =
        a.kind === 'noAnswer' ? 'no answer' : `${a.status}${a.body.error ? ` ${a.body.error}` : ''}`;
      statuses[label] = (statuses[label] ?? 0) + 1;
      if (ambiguous(a)) amb += 1;
      if (a.kind === 'noAnswer') noAnswer += 1;
      if (a.kind === 'answer' && a.status === 202 && typeof a.body.orderId === 'string') {
        acceptedIds.add(a.body.orderId);
      }
    }
  }
  return { sent: logs.length, acceptedIds, ambiguous: amb, noAnswer, statuses };
}

export interface Row {
  id: string;
  user_id: string;
  quantity: number;
  /** confirmed | paid | expired | cancelled (expired and cancelled units went back on sale). */
  status: string;
}

export async function orderRows(pool: pg.Pool, productId: string): Promise<Row[]> {
  const r = await pool.query<Row>('select id, user_id, quantity, status from orders where product_id = $1', [
    productId,
  ]);
  return r.rows;
}

/** Whether a row's units are still sold (not given back by expiry or cancellation). */
export const stillSold = (r: Row): boolean => r.status === 'confirmed' || r.status === 'paid';

/**
 * Waits until the writer has caught up: no reservation without a row, no order job waiting, active or
 * delayed, no fate waiting for Postgres and no returned unit waiting to go back on sale. Returns the
 * final admin status.
 */
export async function waitDrained(
  targets: Targets,
  redis: Redis,
  productId: string,
  timeoutMs: number,
): Promise<{ status: Record<string, unknown>; ms: number }> {
  const started = Date.now();
  let seen = '';
  const status = await until(
    'the writer to catch up',
    async () => {
      const status = await saleStatus(targets, productId);
      const [wait, active, delayed, settling] = await Promise.all([
        redis.llen('bull:orders:wait'),
        redis.llen('bull:orders:active'),
        redis.zcard('bull:orders:delayed'),
        redis.hlen(`sale:{${productId}}:settle`),
      ]).catch(() => [1, 1, 1, 1]);
      const returning = Number(status.returning ?? 0);
      seen = `reserved=${status.reserved} wait=${wait} active=${active} delayed=${delayed} settling=${settling} returning=${returning}`;
      const idle = wait === 0 && active === 0 && delayed === 0 && settling === 0 && returning === 0;
      return status.reserved === 0 && idle ? status : undefined;
    },
    { timeoutMs, everyMs: 250, describe: () => seen },
  );
  return { status, ms: Date.now() - started };
}

export interface VerifyOptions {
  productId: string;
  /** Units ever put on sale for the product. */
  total: number;
  /** Each user placed exactly one logical order: more than one row for a user is a double. */
  oneOrderPerUser?: boolean;
  /** Largest number of units one user may hold (per-user limit), if any. */
  perUserLimit?: number;
  drainTimeoutMs?: number;
}

/**
 * DESIGN.md §5 at the end of a run: after the writer caught up, every 202 has exactly one row, rows
 * nobody was told about are only those of requests that lost their answer, sold == rows (units),
 * available + sold == total, and nothing was sold beyond the stock.
 */
export async function verifyOrders(
  result: ScenarioResult,
  infra: FaultInfra,
  targets: Targets,
  logs: OrderLog[],
  o: VerifyOptions,
): Promise<void> {
  const t = tally(logs);
  result.sent += t.sent;
  result.noAnswer += t.ambiguous;
  result.accepted += t.acceptedIds.size;
  result.details.answers = t.statuses;

  let status: Record<string, unknown>;
  try {
    const drained = await waitDrained(targets, infra.client, o.productId, o.drainTimeoutMs ?? 90_000);
    status = drained.status;
    result.details.catchUpMs = drained.ms;
  } catch (err) {
    fail(result, (err as Error).message);
    status = await saleStatus(targets, o.productId);
  }
  const rows = await orderRows(infra.pool, o.productId);
  result.rows += rows.length;
  const rowIds = new Map<string, number>();
  for (const r of rows) rowIds.set(r.id, (rowIds.get(r.id) ?? 0) + 1);
  const lost = [...t.acceptedIds].filter((id) => !rowIds.has(id));
  const doubledIds = [...rowIds.values()].filter((n) => n > 1).length;
  const orphans = rows.filter((r) => !t.acceptedIds.has(r.id));
  const perUser = new Map<string, number>();
  const rowsPerUser = new Map<string, number>();
  for (const r of rows) {
    // A user holds what was not given back: expired and cancelled units left their limit too.
    if (stillSold(r)) perUser.set(r.user_id, (perUser.get(r.user_id) ?? 0) + r.quantity);
    rowsPerUser.set(r.user_id, (rowsPerUser.get(r.user_id) ?? 0) + 1);
  }
  const doubledUsers = o.oneOrderPerUser ? [...rowsPerUser.entries()].filter(([, n]) => n > 1) : [];
  // Units still sold, and units of expired or cancelled orders (back on sale).
  const units = rows.filter(stillSold).reduce((a, r) => a + r.quantity, 0);
  const returnedUnits = rows.filter((r) => !stillSold(r)).reduce((a, r) => a + r.quantity, 0);
  const sold = Number(status.sold);
  const available = Number(status.available);
  const returning = Number(status.returning ?? 0);
  const returned = Number(status.returned ?? 0);
  const total = Number(status.total);
  const failedJobs = await infra.client.zcard('bull:orders:failed').catch(() => -1);

  // What the clients of a user were told, for each logical order of theirs that got no 202: the
  // answers that hid an order (a row or a failed job no client heard of).
  const byUser = new Map<string, OrderLog[]>();
  for (const l of logs) byUser.set(l.userId, [...(byUser.get(l.userId) ?? []), l]);
  const toldUser = (userId: string, into: Record<string, number>) => {
    for (const l of byUser.get(userId) ?? []) {
      if (l.attempts.some((a) => a.kind === 'answer' && a.status === 202)) continue;
      const label = l.attempts
        .map((a) => (a.kind === 'noAnswer' ? 'no answer' : `${a.status} ${a.body.error ?? ''}`.trim()))
        .join(' → ');
      into[label] = (into[label] ?? 0) + 1;
    }
    return into;
  };
  if (orphans.length > 0) {
    const told: Record<string, number> = {};
    for (const r of orphans) toldUser(r.user_id, told);
    result.details.orphanUsersWereTold = told;
  }
  if (failedJobs > 0) {
    const ids = await infra.client.zrange('bull:orders:failed', 0, 4);
    result.details.failedJobSamples = await Promise.all(
      ids.map(async (id) => {
        const [reason, data] = await infra.client.hmget(`bull:orders:${id}`, 'failedReason', 'data');
        const userId = String((JSON.parse(data ?? '{}') as { userId?: unknown }).userId);
        return { id, reason, answered: t.acceptedIds.has(id), userWasTold: toldUser(userId, {}) };
      }),
    );
  }
  const catchUp = Number(result.details.catchUpMs ?? 0);
  if (catchUp > 15_000) {
    result.notes.push(
      `orders stayed "reserved" ${(catchUp / 1000).toFixed(0)} s after the load: jobs a dead writer left active wait for BullMQ's stalled-job check (WRITER_LOCK_MS + WRITER_STALLED_INTERVAL_MS)`,
    );
  }
  result.lost += lost.length;
  result.doubled += doubledIds + doubledUsers.length;
  result.orphans += orphans.length;
  result.oversold += Math.max(0, units - o.total, sold - o.total);
  Object.assign(result.details, {
    product: o.productId,
    total: o.total,
    sold,
    available,
    confirmedUnits: units,
    returnedUnits,
    failedJobs,
    statusTotal: total,
  });

  check(
    result,
    lost.length === 0,
    `${lost.length} accepted orders have no row (e.g. ${lost.slice(0, 3).join(', ')})`,
  );
  check(result, doubledIds === 0, `${doubledIds} order ids have more than one row`);
  check(
    result,
    doubledUsers.length === 0,
    `${doubledUsers.length} logical orders (one user, one Idempotency-Key) have more than one row (e.g. ${doubledUsers
      .slice(0, 3)
      .map(([u, n]) => `${u}×${n}`)
      .join(', ')})`,
  );
  check(
    result,
    orphans.length <= t.ambiguous,
    `${orphans.length} rows without a 202 but only ${t.ambiguous} requests lost their answer`,
  );
  check(result, units <= o.total, `oversold: ${units} units in rows for ${o.total} on sale`);
  check(result, sold <= o.total, `oversold: sold ${sold} > ${o.total} on sale`);
  check(result, sold === units, `sold (${sold}) != units in rows not expired or cancelled (${units})`);
  check(
    result,
    available + returning + sold === total,
    `available ${available} + returning ${returning} + sold ${sold} != total ${total}`,
  );
  check(
    result,
    returned === returnedUnits,
    `returned ${returned} != units in expired or cancelled rows (${returnedUnits})`,
  );
  check(result, total === o.total, `the sale's total changed: ${total}, expected ${o.total}`);
  check(result, failedJobs === 0, `${failedJobs} order jobs failed permanently`);
  const shards = (status.shards as Array<{ stock: number; key: string }>) ?? [];
  for (const s of shards) check(result, s.stock >= 0, `shard ${s.key} has negative stock ${s.stock}`);
  if (o.perUserLimit) {
    const over = [...perUser.entries()].filter(([, n]) => n > (o.perUserLimit as number));
    check(
      result,
      over.length === 0,
      `${over.length} users bought more than the per-user limit ${o.perUserLimit}`,
    );
    // The limit's counters against what each user really has: more claimed than bought is a claim
    // that was never given back (the user is refused units they did not buy).
    const users = [...new Set(logs.map((l) => l.userId))];
    const p = infra.client.pipeline();
    for (const u of users) p.get(buyerKey(o.productId, u));
    const counters = ((await p.exec()) ?? []).map(([, v]) => Number(v ?? 0));
    let leaked = 0;
    let leakedUnits = 0;
    users.forEach((u, i) => {
      const extra = (counters[i] ?? 0) - (perUser.get(u) ?? 0);
      if (extra > 0) {
        leaked += 1;
        leakedUnits += extra;
      }
    });
    result.details.leakedLimitClaims = { users: leaked, units: leakedUnits };
    if (leaked > 0) {
      result.notes.push(
        `${leaked} users have ${leakedUnits} units of their per-user limit claimed but not bought (claims never given back after the fault)`,
      );
    }
  }
}

export function randomId(prefix: string): string {
  return `${prefix}-${randomBytes(6).toString('hex')}`;
}

/** n distinct random points in [lo, hi), sorted, at least `gap` apart when possible. */
/** What {@link killApiDuring} needs: the running load, the API it kills and how to restart it. */
export interface ApiKills {
  infra: FaultInfra;
  procs: Processes;
  targets: Targets;
  load: Load;
  api: Spawned;
  /** Dispatch counts at which to kill (each kill waits for its count first). */
  points: number[];
  /** The restarted API's environment (as the first one had). */
  env?: Record<string, string>;
  /** Waits, after a point is reached, for a moment worth killing in. */
  beforeKill?: () => Promise<void>;
  /** Runs right after each kill, before the restart (e.g. to look at what the dead API left). */
  afterKill?: () => Promise<void>;
}

/** kill -9 of the API (target slot 0) at each point of a load, restarting it each time; the dispatch count at each kill. */
export async function killApiDuring(k: ApiKills): Promise<number[]> {
  const killedAt: number[] = [];
  let api = k.api;
  for (const at of k.points) {
    await k.load.reached(at);
    await k.beforeKill?.();
    await api.kill();
    k.targets.down(0);
    killedAt.push(k.load.dispatched);
    await k.afterKill?.();
    api = await k.procs.spawn(k.infra, 'api', k.env);
    k.targets.up(0, api.url);
  }
  return killedAt;
}

export function spreadPoints(n: number, lo: number, hi: number): number[] {
  const span = (hi - lo) / n;
  return Array.from({ length: n }, (_, k) => Math.floor(lo + span * k + Math.random() * span * 0.8));
}

// --- scenario scaffolding ------------------------------------------------------------------------

/** Records an exception that escaped a scenario as a failure of it. */
export function scenarioError(result: ScenarioResult, err: unknown): void {
  result.ok = false;
  result.failures.push(`scenario error: ${(err as Error).stack ?? err}`);
}

/**
 * Runs a scenario body on fresh fault infrastructure: an exception becomes a failure of `result`;
 * afterwards every process the body started is reaped and the infrastructure stopped.
 */
export async function withFaultInfra(
  result: ScenarioResult,
  options: InfraOptions,
  body: (infra: FaultInfra, procs: Processes) => Promise<void>,
): Promise<ScenarioResult> {
  const infra = await startFaultInfra(options);
  const procs = new Processes();
  try {
    await body(infra, procs);
  } catch (err) {
    scenarioError(result, err);
  } finally {
    await procs.reapAll();
    await infra.stop();
  }
  return result;
}

export interface SaleSetup {
  worker: Spawned;
  api: Spawned;
  targets: Targets;
  productId: string;
}

/** A worker and one API process, and a sale (product id `<prefix>-…`) created through that API. */
export async function startSale(
  infra: FaultInfra,
  procs: Processes,
  prefix: string,
  sale: { stock: number; shards: number; perUserLimit?: number },
  env: { worker?: Record<string, string>; api?: Record<string, string> } = {},
): Promise<SaleSetup> {
  const worker = await procs.spawn(infra, 'worker', env.worker);
  const api = await procs.spawn(infra, 'api', env.api);
  const targets = new Targets([api.url]);
  const productId = randomId(prefix);
  await putSale(targets, productId, sale);
  return { worker, api, targets, productId };
}

/** Order i: one unit for user `u<i>` (or `u<i % users>`), with its own Idempotency-Key. */
export function unitOrder(productId: string, users?: number): (i: number) => OrderSpec {
  return (i) => ({
    userId: `u${users === undefined ? i : i % users}`,
    quantity: 1,
    key: `${productId}-k${i}`,
  });
}

/** Notes Idempotency-Keys left "request_in_progress" after `after`. */
export function noteStuckKeys(result: ScenarioResult, stuck: OrderLog[], after: string): void {
  if (stuck.length === 0) return;
  result.notes.push(`${stuck.length} Idempotency-Keys stuck "request_in_progress" after ${after}`);
  result.details.stuckKeys = stuck.length;
}
