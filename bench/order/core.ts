// The core scenarios of the order path, a (bare validated 202), b (lock-free decrement), c8 (the real
// path on 8 shards) and d (the sold-out fast path), on each side's API process (one writer beside),
// every process warmed up first, then `rounds` interleaved rounds (a b c8 d, each side in turn, the
// sides' order swapped every round): each figure is the median of its rounds, with their range.
import type { Infra } from '../../harness/service.ts';
import { checkReservationsOnly, settleAndCheck, type Violation } from './checks.ts';
import type { LoadOptions } from './load.ts';
import { type Measured, measure } from './measure.ts';
import { createSale, sellOut } from './sales.ts';
import type { Side, SideProcesses } from './sides.ts';

export const CORE_KEYS = ['a', 'b', 'c8', 'd'] as const;
export type CoreKey = (typeof CORE_KEYS)[number];

export const CORE_LABELS: Record<CoreKey, string> = {
  a: 'bare validated 202 (no Redis)',
  b: 'lock-free Lua decrement, no enqueue',
  c8: 'real path, 8 shards',
  d: 'sold-out fast path (409)',
};

const PATHS: Record<CoreKey, string> = {
  a: '/bench/bare',
  b: '/bench/unlocked',
  c8: '/api/orders',
  d: '/api/orders',
};

const BIG_STOCK = 10_000_000;
const SOLD_OUT_STOCK = 500;

export interface CoreOptions {
  infra: Infra;
  procs: SideProcesses;
  sides: Side[];
  /** Whose writer process runs beside the APIs (one writer serves every side). */
  writer: Side;
  rounds: number;
  seconds: number;
  warmupSeconds: number;
  connections: number;
  log: (line: string) => void;
  record: (found: Violation[]) => void;
}

/** Every measurement, by side name and scenario, in round order. */
export type CoreRuns = Map<string, Record<CoreKey, Measured[]>>;

const productOf = (side: Side, key: string, round: number | 'warm') => `core-${side.name}-${key}-${round}`;

export async function coreRounds(o: CoreOptions): Promise<CoreRuns> {
  // b leaves its orders as reservations, checked and deleted after each run: the sweeper must not
  // enqueue them meanwhile (it takes reservations older than SWEEP_AGE_MS, 5 s by default).
  const worker = await o.procs.worker(o.writer, { SWEEP_AGE_MS: '3600000' });
  const apis = new Map<string, Awaited<ReturnType<SideProcesses['api']>>>();
  for (const side of o.sides) apis.set(side.name, await o.procs.api(side));
  const checker = apiOf(apis, o.writer).url;
  const runs: CoreRuns = new Map(o.sides.map((s) => [s.name, { a: [], b: [], c8: [], d: [] }]));
  for (const side of o.sides) {
    const url = apiOf(apis, side).url;
    const ids = [productOf(side, 'b', 'warm'), productOf(side, 'c8', 'warm')];
    for (let r = 1; r <= o.rounds; r++) ids.push(productOf(side, 'b', r), productOf(side, 'c8', r));
    for (const id of ids) await createSale(url, id, BIG_STOCK, 8);
    await createSale(url, productOf(side, 'd', 0), SOLD_OUT_STOCK, 8);
    const sold = await sellOut(url, productOf(side, 'd', 0), 50);
    if (sold.accepted !== SOLD_OUT_STOCK)
      o.record([{ scenario: 'd', check: 'sell-out accepts the stock', detail: `${sold.accepted}` }]);
  }
  o.log(`core: warm-up, ${o.warmupSeconds} s of each scenario on each side's API`);
  for (const side of o.sides)
    for (const key of CORE_KEYS) await one(o, side, apiOf(apis, side), key, 'warm', o.warmupSeconds, checker);
  for (let round = 1; round <= o.rounds; round++) {
    const order = round % 2 === 1 ? o.sides : [...o.sides].reverse();
    for (const key of CORE_KEYS)
      for (const side of order) {
        const m = await one(o, side, apiOf(apis, side), key, round, o.seconds, checker);
        runs.get(side.name)?.[key].push(m);
        o.log(
          `  round ${round} ${key.padEnd(3)} ${side.name.padEnd(8)} ${Math.round(m.rate)}/s  ${Math.round(m.cpuUs)} µs/answer  load ${m.load1.toFixed(1)}`,
        );
      }
  }
  for (const api of apis.values()) await o.procs.stop(api);
  await o.procs.stop(worker);
  return runs;
}

function apiOf<T>(apis: Map<string, T>, side: Side): T {
  const api = apis.get(side.name);
  if (!api) throw new Error(`no API for ${side.name}`);
  return api;
}

/** One load of `key` on the side's API, then that scenario's checks. */
async function one(
  o: CoreOptions,
  side: Side,
  api: { url: string; proc: { pid?: number } },
  key: CoreKey,
  round: number | 'warm',
  seconds: number,
  /** The API whose database the writer fills: it answers every side's reconcile. */
  checker: string,
): Promise<Measured> {
  const productId = key === 'd' ? productOf(side, 'd', 0) : productOf(side, key, round);
  const load: LoadOptions = {
    targets: [{ url: api.url, path: PATHS[key] }],
    productId,
    userPrefix: `${side.name}-${key}-${round}`,
    connections: o.connections,
    seconds,
    expectStatus: key === 'd' ? 409 : 202,
  };
  const m = await measure(api.proc.pid, load);
  const r = m.result;
  const scenario = `${key}/${side.name}/${round}`;
  const found: Violation[] = [];
  // A 429 (admission control, the waiting room on a starved machine) is an answer, counted out of
  // the rate; a 5xx, or an order accepted on a sold-out product, is a fault.
  const wrong = Object.keys(r.statuses).filter((s) => Number(s) >= 500 || (key === 'd' && Number(s) < 300));
  if (wrong.length > 0)
    found.push({ scenario, check: 'no 5xx (d: no 2xx)', detail: JSON.stringify(r.statuses) });
  if (key === 'c8')
    found.push(
      ...(
        await settleAndCheck({
          scenario,
          url: checker,
          productId,
          accepted: r.accepted,
          unknown: r.unknown,
          rows: o.infra.rows,
        })
      ).violations,
    );
  if (key === 'b')
    found.push(
      ...(await checkReservationsOnly({
        scenario,
        redis: o.infra.client,
        productId,
        accepted: r.accepted,
        unknown: r.unknown,
      })),
    );
  o.record(found);
  return m;
}
