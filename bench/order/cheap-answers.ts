// Issue 24's cheap herd answers: API CPU per `queued`, `sold_out`, `not_started`, `busy` and
// `rate_limited` answer against a bare node:http server (bare-http.ts) answering the same status with
// a body of the same size, each a closed-model load, in interleaved rounds (each kind: every side's
// API, then the bare server), medians and ranges. Target: each at most 1.2x the bare answer.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { freePort } from '../../harness/redis-server.ts';
import type { Infra, Spawned } from '../../harness/service.ts';
import { blockLine } from './answer-cost.ts';
import { type Measured, measure } from './measure.ts';
import { createSale, sellOut } from './sales.ts';
import type { Side, SideProcesses } from './sides.ts';

export const CHEAP_KINDS = ['queued', 'sold_out', 'not_started', 'busy', 'rate_limited'] as const;
export type CheapKind = (typeof CHEAP_KINDS)[number];
export const CHEAP_TARGET = 1.2;

const STATUS: Record<CheapKind, number> = {
  queued: 429,
  sold_out: 409,
  not_started: 409,
  busy: 429,
  rate_limited: 429,
};

/** Process settings: the room's (queued, sold_out, not_started), one admission slot, 1 order/s per address. */
const ENV = {
  room: { WAITING_ROOM: 'on' },
  busy: {
    WAITING_ROOM: 'off',
    ADMISSION_LIMIT: '1',
    ADMISSION_MIN_LIMIT: '1',
    ADMISSION_MAX_LIMIT: '1',
    ADMISSION_MAX_QUEUE: '0',
  },
  limited: { WAITING_ROOM: 'off', RATE_LIMIT_PER_IP: '1:1' },
};
const PROCESS_OF: Record<CheapKind, keyof typeof ENV> = {
  queued: 'room',
  sold_out: 'room',
  not_started: 'room',
  busy: 'busy',
  rate_limited: 'limited',
};

export interface CheapOptions {
  infra: Infra;
  procs: SideProcesses;
  sides: Side[];
  rounds: number;
  seconds: number;
  connections: number;
  log: (line: string) => void;
}

export interface CheapRuns {
  /** By side name, then kind: every round's API measurement. */
  api: Map<string, Record<CheapKind, Measured[]>>;
  /** By kind: the bare server's measurements. */
  bare: Record<CheapKind, Measured[]>;
  /** Body bytes of each kind's answer (the first side's), which the bare server matched. */
  bytes: Record<CheapKind, number>;
}

const empty = <T>(): Record<CheapKind, T[]> => ({
  queued: [],
  sold_out: [],
  not_started: [],
  busy: [],
  rate_limited: [],
});

export async function cheapAnswers(o: CheapOptions): Promise<CheapRuns> {
  const bare = await startBare();
  const apis = new Map<string, Record<keyof typeof ENV, Spawned>>();
  for (const side of o.sides) {
    apis.set(side.name, {
      room: await o.procs.api(side, ENV.room),
      busy: await o.procs.api(side, ENV.busy),
      limited: await o.procs.api(side, ENV.limited),
    });
    await prepare(side, apis.get(side.name)?.room.url as string);
  }
  const runs: CheapRuns = {
    api: new Map(o.sides.map((s) => [s.name, empty()])),
    bare: empty(),
    bytes: {} as never,
  };
  try {
    for (const kind of CHEAP_KINDS) {
      const first = o.sides[0] as Side;
      const api = apis.get(first.name)?.[PROCESS_OF[kind]] as Spawned;
      runs.bytes[kind] = await withHeld(kind, api, first, o.infra.client, async () =>
        probe(kind, api.url, first),
      );
    }
    // The first round warms every process up; it is not counted.
    for (let round = 0; round <= o.rounds; round++) {
      const order = round % 2 === 1 ? o.sides : [...o.sides].reverse();
      for (const kind of CHEAP_KINDS) {
        for (const side of order) {
          const api = apis.get(side.name)?.[PROCESS_OF[kind]] as Spawned;
          const m = await withHeld(kind, api, side, o.infra.client, () =>
            measure(api.proc.pid, loadOf(o, api.url, orderPath(kind), productOf(side, kind), kind, round)),
          );
          if (round > 0) runs.api.get(side.name)?.[kind].push(m);
          o.log(
            `  ${round === 0 ? 'warm' : `round ${round}`} ${kind.padEnd(12)} ${side.name.padEnd(8)} ${Math.round(m.cpuUs)} µs/answer (${Math.round(m.rate)}/s, other answers ${(m.unexpectedShare * 100).toFixed(1)} %)`,
          );
        }
        const path = `/?status=${STATUS[kind]}&bytes=${runs.bytes[kind]}`;
        const m = await measure(bare.pid, loadOf(o, bare.url, path, 'bare', kind, round));
        if (round > 0) runs.bare[kind].push(m);
        o.log(
          `  ${round === 0 ? 'warm' : `round ${round}`} ${kind.padEnd(12)} ${'node:http'.padEnd(8)} ${Math.round(m.cpuUs)} µs/answer (${Math.round(m.rate)}/s)`,
        );
      }
    }
  } finally {
    for (const set of apis.values()) for (const p of Object.values(set)) await o.procs.stop(p);
    bare.stop();
  }
  return runs;
}

const productOf = (side: Side, kind: CheapKind) => `cheap-${side.name}-${kind}`;
const orderPath = (_kind: CheapKind) => '/api/orders';

function loadOf(
  o: CheapOptions,
  url: string,
  path: string,
  productId: string,
  kind: CheapKind,
  round: number,
) {
  return {
    targets: [{ url, path }],
    productId,
    userPrefix: `cheap-${kind}-${round}`,
    connections: o.connections,
    seconds: o.seconds,
    expectStatus: STATUS[kind],
  };
}

/** The side's products: a line nobody passes (queued), one sold out, one opening tomorrow, and big stocks. */
async function prepare(side: Side, url: string): Promise<void> {
  await createSale(url, productOf(side, 'queued'), 1_000, 8);
  await createSale(url, productOf(side, 'sold_out'), 1, 8);
  await sellOut(url, productOf(side, 'sold_out'), 1);
  const tomorrow = new Date(Date.now() + 86_400_000).toISOString();
  await createSale(url, productOf(side, 'not_started'), 1_000, 8, tomorrow);
  await createSale(url, productOf(side, 'busy'), 10_000_000, 8);
  await createSale(url, productOf(side, 'rate_limited'), 10_000_000, 8);
}

/**
 * Runs `f` with the kind's precondition in place. queued: the line blocked (read back by the process
 * within its 100 ms tick). busy: the process's one admission slot held by an order whose first Redis
 * write waits under CLIENT PAUSE WRITE, so every other order is refused on arrival; unpaused after.
 */
async function withHeld<T>(
  kind: CheapKind,
  api: Spawned,
  side: Side,
  redis: Redis,
  f: () => Promise<T>,
): Promise<T> {
  if (kind === 'queued') {
    await blockLine(redis, productOf(side, kind));
    await sleep(300);
    return f();
  }
  if (kind !== 'busy') return f();
  await redis.call('CLIENT', 'PAUSE', '60000', 'WRITE');
  const held = fetch(`${api.url}/api/orders`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ productId: productOf(side, kind), userId: `hold-${Date.now()}`, quantity: 1 }),
  });
  try {
    // The slot is taken once an order is refused busy.
    for (let i = 0; ; i++) {
      const r = await fetch(`${api.url}/api/orders`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ productId: productOf(side, kind), userId: `probe-${i}`, quantity: 1 }),
        signal: AbortSignal.timeout(100),
      }).catch(() => undefined);
      if (r?.status === 429) break;
      if (i > 100) throw new Error('busy: the admission slot was never taken');
    }
    return await f();
  } finally {
    await redis.call('CLIENT', 'UNPAUSE');
    await held;
  }
}

/** The body size of the kind's answer (rate_limited: the address's first order passes). */
async function probe(kind: CheapKind, url: string, side: Side): Promise<number> {
  for (let i = 0; ; i++) {
    const r = await fetch(`${url}/api/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ productId: productOf(side, kind), userId: `probe-size-${i}`, quantity: 1 }),
    });
    const body = await r.text();
    if (r.status === STATUS[kind]) return Buffer.byteLength(body);
    if (i >= 2) throw new Error(`${kind}: probe answered ${r.status} ${body}`);
  }
}

async function startBare(): Promise<{ url: string; pid: number | undefined; stop(): void }> {
  const port = await freePort();
  const script = fileURLToPath(new URL('./bare-http.ts', import.meta.url));
  const proc = spawn(process.execPath, ['--import', 'tsx', script, String(port)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await once(proc.stdout, 'data');
  return { url: `http://127.0.0.1:${port}`, pid: proc.pid, stop: () => proc.kill('SIGTERM') };
}
