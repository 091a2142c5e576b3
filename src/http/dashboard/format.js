// The dashboard's words and numbers: figures as a person reads them, a sale's settings, its changes
// (who made each, and why the service makes some on its own), the waiting room's line.

export const DASH = '–';

export const fmt = (n, digits = 0) =>
  n === null || n === undefined || Number.isNaN(n)
    ? DASH
    : Number(n).toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 });

export const fmtMs = (n) => (n === null || n === undefined ? DASH : `${fmt(n, n < 10 ? 2 : 1)} ms`);

/** Axis labels: 1,200 → 1.2k, so a label never grows wider than its axis. */
export function fmtAxis(n) {
  const abs = Math.abs(n);
  if (abs >= 1e6) return `${fmt(n / 1e6, 1)}M`;
  if (abs >= 1e4) return `${fmt(n / 1e3, 0)}k`;
  if (abs >= 1e3) return `${fmt(n / 1e3, 1)}k`;
  return fmt(n, abs < 10 ? 2 : 1);
}

const TIME = {
  day: 'numeric',
  month: 'short',
  year: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  timeZoneName: 'short',
};

/** An ISO time as this browser's local date and time, with the zone ("1 Dec 2026, 21:14:05 UTC"). */
export function fmtTime(iso) {
  return new Date(iso).toLocaleString('en-GB', TIME);
}

const plural = (n, word) => `${fmt(n)} ${word}${n === 1 ? '' : 's'}`;

/** The sale's settings as [label, text, ISO time when it is one] rows, each named even when not set. */
export function settingRows(s) {
  const lottery = s.queue?.lottery;
  return [
    ['opens', s.startsAt === undefined ? 'at once (no start time)' : fmtTime(s.startsAt), s.startsAt],
    ['closes', s.endsAt === undefined ? 'never (no end time)' : fmtTime(s.endsAt), s.endsAt],
    [
      'payment',
      s.paymentTimeoutSec === undefined ? 'none needed' : `within ${plural(s.paymentTimeoutSec, 'second')}`,
    ],
    ['per buyer', s.perUserLimit === null ? 'no limit' : `at most ${plural(s.perUserLimit, 'unit')}`],
    [
      'lottery',
      lottery
        ? `first ${plural(lottery.lotterySeconds, 'second')}, drawn ${fmtTime(lottery.closesAt)}`
        : 'none (first come, first served)',
    ],
  ];
}

const KINDS = {
  created: 'sale created',
  replaced: 'sale replaced',
  restocked: 'restocked',
  resharded: 'resharded',
  returned: 'expired and cancelled units put back on sale',
};

const CAUSES = {
  admin: 'an admin',
  consolidation: 'the service: sold-out consolidation',
  returns: 'the service: payment timeouts and cancels',
};

/** Why the service changes a sale on its own, for the change it made. */
const WHY = {
  consolidation:
    'an order found every shard short of its quantity while they held enough in all, so the stock left was regrouped into fewer shards',
  returns: 'units of expired or cancelled orders came back on sale in a new generation',
};

export const kindText = (c) => KINDS[c.kind] ?? c.kind;
export const causeText = (c) => CAUSES[c.by] ?? c.by;

/** The newest change in one sentence: what, by whom, when, and why when the service made it. */
export function lastChangeText(change) {
  if (!change) return 'no change recorded yet';
  const why = WHY[change.by] ? ` (${WHY[change.by]})` : '';
  return `${kindText(change)} to ${plural(change.shards, 'shard')} by ${causeText(change)}, ${fmtTime(change.at)}${why}`;
}

/** The waiting room's line (GET /api/products/:id's `queue`, with pace and ETA). */
export function lineText(line) {
  const draw = line.lottery && !line.lottery.seed ? ` · lottery drawn ${fmtTime(line.lottery.closesAt)}` : '';
  return (
    `${fmt(line.waiting)} waiting · ${fmt(line.admittedPerSecond, 1)}/s let in · ` +
    `serving lag ${fmtMs(line.servingLagMs)} · ETA ${fmtMs(line.etaMs)}${draw}`
  );
}
