// Phase streams (BENCH_ONLY=streams): what a held buyer costs the API. STREAMS buyers held on their
// streams (a sale in its lottery window lets nobody in), the API's memory and CPU read around them.
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { until } from '../../harness/async.ts';
import { admin, call } from '../../harness/service.ts';
import { num, printTable } from '../lib/table.ts';
import { treeCpuSeconds } from './cpu.ts';
import type { Phase } from './phase.ts';

/** Streams held (each a connection, so a file on both sides): under the 20,000 open files of a process. */
const STREAMS = 5000;
/** How long the held streams are watched for their keep-alive and progress CPU (s). */
const HOLD_SECONDS = 10;

interface StreamCost {
  streams: number;
  rssBeforeMb: number;
  rssHeldMb: number;
  kbPerStream: number;
  /** API CPU while the streams were being opened and held (their first event), per stream. */
  openCpuUsPerStream: number;
  /** API CPU per held stream per second of holding (passes, keep-alives). */
  holdCpuUsPerStreamSecond: number;
}

/** The process's resident set (MB), from /proc. */
async function rssMb(pid: number | undefined): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1] ?? Number.NaN) / 1024;
}

/** Streams held by the API, from its /metrics. */
async function held(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(/^flashsale_streams_held (\S+)$/m.exec(text)?.[1] ?? 0);
}

/** Opens `n` streams of distinct buyers on connections of their own; resolves with their closers. */
async function openStreams(url: string, productId: string, n: number) {
  const agent = new Agent({ connections: n, pipelining: 0 });
  const bodies = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const res = await request(`${url}/api/orders`, {
        method: 'POST',
        dispatcher: agent,
        headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify({ productId, userId: `held-${i}`, quantity: 1 }),
      });
      return res.body;
    }),
  );
  return async () => {
    for (const b of bodies) b.destroy();
    await agent.destroy();
  };
}

export const streamsPhase: Phase = {
  name: 'streams',
  inFullRun: true,
  async run(bench) {
    bench.log(`phase streams: ${STREAMS} buyers held on their streams (a lottery window), memory and CPU`);
    const api = await bench.spawn('api', { WAITING_ROOM: 'on' });
    try {
      const productId = `bench-streams-${Date.now().toString(36)}`;
      const put = { stock: 1000, shards: 8, queue: { lotterySeconds: 3600 } };
      await call(api.url, 'PUT', `/admin/products/${productId}`, put, admin);
      const rssBefore = await rssMb(api.proc.pid);
      const cpu0 = treeCpuSeconds(api.proc.pid);
      const close = await openStreams(api.url, productId, STREAMS);
      await until('every stream held', async () => (await held(api.url)) >= STREAMS);
      const cpu1 = treeCpuSeconds(api.proc.pid);
      const rssHeld = await rssMb(api.proc.pid);
      await sleep(HOLD_SECONDS * 1000);
      const cpu2 = treeCpuSeconds(api.proc.pid);
      await close();
      const cost: StreamCost = {
        streams: STREAMS,
        rssBeforeMb: rssBefore,
        rssHeldMb: rssHeld,
        kbPerStream: ((rssHeld - rssBefore) * 1024) / STREAMS,
        openCpuUsPerStream: ((cpu1 - cpu0) * 1e6) / STREAMS,
        holdCpuUsPerStreamSecond: ((cpu2 - cpu1) * 1e6) / (STREAMS * HOLD_SECONDS),
      };
      return { report: () => report(cost) };
    } finally {
      await bench.stop(api);
    }
  },
};

function report(c: StreamCost) {
  printTable(
    `What a held buyer costs the API (${num(c.streams)} streams held, ${HOLD_SECONDS} s)`,
    [
      { header: 'figure', value: (r: [string, string]) => r[0], align: 'left' },
      { header: 'value', value: (r: [string, string]) => r[1] },
    ],
    [
      ['RSS before / with the streams held (MB)', `${num(c.rssBeforeMb)} / ${num(c.rssHeldMb)}`],
      ['memory per held stream (kB)', num(c.kbPerStream, 1)],
      ['API CPU to read, queue and hold one stream (µs)', num(c.openCpuUsPerStream)],
      ['API CPU per held stream per second (µs)', num(c.holdCpuUsPerStreamSecond, 2)],
    ] as [string, string][],
  );
  return { checks: [], json: { streamCost: c } };
}
