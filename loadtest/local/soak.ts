// The soak scenario (loadtest/soak.js from Node): buyers at a steady RATE for DURATION with a
// restock every RESTOCK_EVERY, and the drift of the 202s' p99 from the first window to the last.
import { buyers, percentile, type Recorder } from './load.ts';
import { buyerOptions, fmt, onSchedule, type RunContext, type Scenario } from './scenario.ts';
import { adminCall } from './target.ts';
import type { Check } from './verify.ts';

/** Restocks one interval in, then every interval, while the buyers run (k6: ceil((D - T) / T)). */
async function restocks(ctx: RunContext, durationSec: number, delta: number) {
  const out = { sent: 0, ok: 0, problems: [] as string[] };
  const everySec = ctx.vars.duration('RESTOCK_EVERY', '60s');
  const schedule = { first: 1, everySec, untilSec: durationSec, skipLate: false, signal: ctx.signal };
  await onSchedule(schedule, async () => {
    const r = await adminCall(ctx.target, 'POST', `/admin/products/${ctx.productId}/restock`, { delta });
    out.sent++;
    if (r.status === 200) out.ok++;
    else if (out.problems.length < 5)
      out.problems.push(`restock answered ${r.status}: ${r.text.slice(0, 300)}`);
  });
  return out;
}

/** Drift: p99 of 202s in the first and in the last window of the run (by arrival time). */
function drift(rec: Recorder, startAt: number, durationSec: number, windowSec: number) {
  const early: number[] = [];
  const late: number[] = [];
  rec.acceptedAt.forEach((at, i) => {
    const t = (at - startAt) / 1000;
    const ms = rec.acceptedMs[i] as number;
    if (t < windowSec) early.push(ms);
    else if (t >= durationSec - windowSec) late.push(ms);
  });
  const p99 = (xs: number[]) =>
    percentile(
      [...xs].sort((a, b) => a - b),
      99,
    );
  return { early, late, earlyP99: p99(early), lateP99: p99(late) };
}

function driftThresholds(
  d: ReturnType<typeof drift>,
  ctx: RunContext,
  judged: boolean,
  ratio?: number,
): Check[] {
  const p99Bound = ctx.vars.number('P99_MS', 500);
  const lateP99Bound = ctx.vars.number('LATE_P99_MS', p99Bound);
  const maxDrift = ctx.vars.number('MAX_DRIFT', 1.5);
  const minBaseline = ctx.vars.int('MIN_BASELINE', 50);
  return [
    {
      name: `early p99 of 202s < ${p99Bound}ms`,
      ok: d.earlyP99 !== undefined && d.earlyP99 < p99Bound,
      detail: fmt(d.earlyP99),
    },
    {
      name: `late p99 of 202s < ${lateP99Bound}ms`,
      ok: d.lateP99 !== undefined && d.lateP99 < lateP99Bound,
      detail: fmt(d.lateP99),
    },
    {
      name: `drift: late p99 <= ${maxDrift} x early p99`,
      ok: !judged || (ratio as number) <= maxDrift,
      detail: judged
        ? `ratio ${(ratio as number).toFixed(2)}`
        : `not judged: ${d.early.length} early 202s < MIN_BASELINE ${minBaseline}`,
    },
  ];
}

export const soak: Scenario = {
  prefix: 'soak',
  sizing: (v) => ({ stock: v.int('STOCK', v.int('RATE', 100) * 60), shards: v.int('SHARDS', 8) }),
  plannedSec: (v) => v.duration('DURATION', '30m'),
  async run(ctx) {
    const { vars } = ctx;
    const rate = vars.int('RATE', 100);
    const durationSec = vars.duration('DURATION', '30m');
    const delta = vars.int('RESTOCK', Math.ceil((rate * vars.duration('RESTOCK_EVERY', '60s')) / 2));
    const windowSec = vars.number('PHASE_WINDOW', Math.min(300, durationSec / 4));
    if (windowSec * 2 > durationSec) throw new Error('PHASE_WINDOW must be at most half of DURATION');
    const rec = ctx.recorder('buyers');
    const startAt = Date.now() - rec.epoch;
    const [, r] = await Promise.all([
      buyers([{ rate, seconds: durationSec }], buyerOptions(ctx, 'buyers'), rec),
      restocks(ctx, durationSec, delta),
    ]);
    const d = drift(rec, startAt, durationSec, windowSec);
    const judged =
      d.early.length >= vars.int('MIN_BASELINE', 50) && d.earlyP99 !== undefined && d.lateP99 !== undefined;
    const ratio = judged ? (d.lateP99 as number) / (d.earlyP99 as number) : undefined;
    return {
      phases: [rec],
      totalPutOnSale: ctx.stock + r.ok * delta,
      checks: [
        {
          name: 'every restock answered 200',
          ok: r.ok === r.sent,
          detail: r.problems.length ? r.problems.join(' | ') : undefined,
        },
      ],
      thresholds: driftThresholds(d, ctx, judged, ratio),
      lines: [
        `  drift (first vs last ${Math.round(windowSec)}s): p99 of 202s early ${fmt(d.earlyP99)} (${d.early.length})  late ${fmt(d.lateP99)} (${d.late.length})  ratio ${ratio === undefined ? '-' : ratio.toFixed(2)}`,
        `  restocks: ${r.ok} of ${r.sent} x ${delta}`,
      ],
    };
  },
};
