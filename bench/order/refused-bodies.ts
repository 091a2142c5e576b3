// Refused bodies' cost (issue 37), `npm run bench:refused-bodies`: the API's CPU for one refused
// 100 GB upload (a Content-Length of 100 GB, and a chunked body that never ends), and what 20 such
// uploaders do to /healthz and to a burst of orders beside them: medians of interleaved rounds
// (BENCH_REPEATS, default 3), alone, beside the uploaders and beside 20 clients that send a plain
// GET /healthz on a new connection each time (what any client can cost, for scale), side by side.
// Each refused upload is at once followed by the next, so the uploaders are a flood of refusals.
// The clients run in a child process (this file with `upload`), not slowing the measuring client.
import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import { connect } from 'node:net';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { admin, NO_LOAD_SHEDDING, spawnService, startInfra } from '../../harness/service.ts';
import { envNumber } from '../lib/output.ts';
import { ratio, summarize } from '../lib/stats.ts';
import { ms, num, printTable, times } from '../lib/table.ts';
import { processCpuSeconds } from './cpu.ts';

const HUNDRED_GB = 100_000_000_000;
const PAY = '/api/orders/none.1.0.000000000000000000000000/pay';
const CHUNK = Buffer.alloc(64 * 1024, 0x20);
const CHUNKED = Buffer.concat([Buffer.from(`${CHUNK.length.toString(16)}\r\n`), CHUNK, Buffer.from('\r\n')]);

type Kind = 'length' | 'chunked';

/** One upload of 100 GB (or an endless chunked one) to `url`; resolves once the server closed it. */
async function upload(url: URL, kind: Kind): Promise<void> {
  const socket = connect(Number(url.port), url.hostname);
  socket.on('error', () => {});
  await once(socket, 'connect');
  const framing = kind === 'length' ? `Content-Length: ${HUNDRED_GB}` : 'Transfer-Encoding: chunked';
  socket.write(`POST ${PAY} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n${framing}\r\n\r\n`);
  const body = kind === 'length' ? CHUNK : CHUNKED;
  const closed = new Promise((resolve) => socket.once('close', resolve));
  while (!socket.destroyed && socket.writable) {
    if (!socket.write(body)) {
      // Not events.once: it rejects on the 'error' a reset connection emits, which ends the upload too.
      await Promise.race([new Promise((resolve) => socket.once('drain', resolve)), closed]);
    }
  }
  await closed;
}

/** One GET /healthz on a connection of its own (closed after the answer). */
async function plainRequest(url: URL): Promise<void> {
  const socket = connect(Number(url.port), url.hostname);
  socket.on('error', () => {});
  const closed = new Promise((resolve) => socket.once('close', resolve));
  socket.write('GET /healthz HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n');
  socket.resume();
  await closed;
}

type Side = 'alone' | 'uploads' | 'requests';

/** The child: `n` clients, each uploading (or requesting) one after another until SIGTERM; reports how many. */
async function clients(side: Side, url: URL, n: number): Promise<void> {
  let stopping = false;
  let done = 0;
  process.once('SIGTERM', () => {
    stopping = true;
  });
  const loops = Array.from({ length: n }, async (_, i) => {
    while (!stopping) {
      await (side === 'uploads' ? upload(url, i % 2 === 0 ? 'length' : 'chunked') : plainRequest(url));
      done += 1;
    }
  });
  process.send?.('ready');
  await Promise.all(loops);
  process.send?.(done, () => process.exit(0));
}

/** API CPU ms per refused upload: `count` uploads one after another, less idle CPU over as long. */
async function cpuPerUpload(url: URL, pid: number, kind: Kind, count: number): Promise<number> {
  const start = performance.now();
  const before = processCpuSeconds(pid);
  for (let i = 0; i < count; i++) await upload(url, kind);
  const busy = processCpuSeconds(pid) - before;
  const idleStart = processCpuSeconds(pid);
  await new Promise((resolve) => setTimeout(resolve, performance.now() - start));
  const idle = processCpuSeconds(pid) - idleStart;
  return ((busy - idle) * 1000) / count;
}

/** Latencies (ms) of `n` GET /healthz, one after another. */
async function healthz(url: string, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await (await fetch(`${url}/healthz`)).arrayBuffer();
    out.push(performance.now() - t);
  }
  return out;
}

/** Wall ms of `orders` POST /api/orders from `concurrency` clients, each a distinct buyer; and the 202s. */
async function burst(url: string, round: string, orders: number, concurrency: number) {
  let next = 0;
  let accepted = 0;
  const t = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < orders) {
        const i = next++;
        const res = await fetch(`${url}/api/orders`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ productId: 'refused-bench', userId: `${round}-${i}` }),
        });
        await res.arrayBuffer();
        if (res.status === 202) accepted += 1;
      }
    }),
  );
  return { ms: performance.now() - t, accepted };
}

/** Starts the clients' child; resolves once its connections are going. */
async function startClients(side: Side, url: string, n: number): Promise<ChildProcess> {
  const child = fork(fileURLToPath(import.meta.url), ['clients', side, url, String(n)], {
    execArgv: ['--import', 'tsx'],
  });
  await once(child, 'message');
  return child;
}

/** Stops the clients' child; resolves with how many uploads (or requests) they got answered. */
async function stopClients(child: ChildProcess): Promise<number> {
  const count = new Promise<number>((resolve) => child.on('message', (m) => resolve(Number(m))));
  child.kill('SIGTERM');
  const n = await count;
  await once(child, 'exit');
  return n;
}

async function main(): Promise<void> {
  const repeats = envNumber('BENCH_REPEATS', 3);
  const orders = envNumber('BENCH_BURST_ORDERS', 1500);
  const infra = await startInfra();
  const api = await spawnService(infra, 'api', { ...NO_LOAD_SHEDDING, LOG_LEVEL: 'error' });
  const pid = api.proc.pid as number;
  try {
    const put = await fetch(`${api.url}/admin/products/refused-bench`, {
      method: 'PUT',
      headers: { ...admin, 'content-type': 'application/json' },
      body: JSON.stringify({ stock: 1_000_000, shards: 8 }),
    });
    if (!put.ok) throw new Error(`sale not created: ${put.status}`);
    const cpu: Record<Kind, number[]> = { length: [], chunked: [] };
    const sides: Side[] = ['alone', 'uploads', 'requests'];
    const health: Record<Side, number[]> = { alone: [], uploads: [], requests: [] };
    const bursts: Record<Side, number[]> = { alone: [], uploads: [], requests: [] };
    const rates: Record<Side, number[]> = { alone: [], uploads: [], requests: [] };
    const apiCpu: Record<Side, number[]> = { alone: [], uploads: [], requests: [] };
    let accepted = 0;
    await burst(api.url, 'warm', 200, 20);
    for (let r = 0; r < repeats; r++) {
      for (const kind of ['length', 'chunked'] as const)
        cpu[kind].push(await cpuPerUpload(new URL(api.url), pid, kind, 50));
      for (const side of sides) {
        const child = side === 'alone' ? undefined : await startClients(side, api.url, 20);
        const t = performance.now();
        const cpuBefore = processCpuSeconds(pid);
        health[side].push(summarize(await healthz(api.url, 200)).p50);
        const b = await burst(api.url, `${side}-${r}`, orders, 50);
        bursts[side].push(b.ms);
        accepted += b.accepted;
        const seconds = (performance.now() - t) / 1000;
        apiCpu[side].push(((processCpuSeconds(pid) - cpuBefore) / seconds) * 100);
        if (child) rates[side].push((await stopClients(child)) / seconds);
      }
    }
    report(cpu, { health, bursts, rates, apiCpu }, { repeats, orders, accepted });
  } finally {
    await api.stop();
    await infra.stop();
  }
}

function report(
  cpu: Record<Kind, number[]>,
  by: Record<'health' | 'bursts' | 'rates' | 'apiCpu', Record<Side, number[]>>,
  o: { repeats: number; orders: number; accepted: number },
): void {
  const med = (v: number[]) => summarize(v).p50;
  const load = os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  console.log(`load average ${load}, ${os.cpus().length} cores, ${o.repeats} interleaved rounds (medians)`);
  printTable(
    'API CPU per refused 100 GB upload (target < 10 ms)',
    [
      { header: 'body', value: (r: { kind: string }) => r.kind, align: 'left' },
      { header: 'CPU ms', value: (r: { v: number }) => num(r.v, 2), align: 'right' },
    ],
    [
      { kind: 'Content-Length: 100 GB', v: med(cpu.length) },
      { kind: 'chunked, never ends', v: med(cpu.chunked) },
    ],
  );
  type Row = { what: string; v: Record<Side, number>; format: (v: number) => string };
  const row = (what: string, values: Record<Side, number[]>, format: Row['format']): Row => ({
    what,
    v: { alone: med(values.alone), uploads: med(values.uploads), requests: med(values.requests) },
    format,
  });
  const rows = [
    row('/healthz p50 ms', by.health, ms),
    row(`${o.orders} orders, 50 clients, ms`, by.bursts, ms),
    row('the 20 clients answered/s', by.rates, (v) => num(v)),
    row('API CPU, % of a core', by.apiCpu, (v) => num(v)),
  ];
  printTable(
    'Beside 20 clients: uploading 100 GB one after another, or a GET each on a new connection (target: burst within 10 % of alone)',
    [
      { header: '', value: (r: Row) => r.what, align: 'left' },
      { header: 'alone', value: (r: Row) => r.format(r.v.alone) },
      { header: 'uploads', value: (r: Row) => r.format(r.v.uploads) },
      { header: 'uploads/alone', value: (r: Row) => times(ratio(r.v.uploads, r.v.alone)) },
      { header: 'requests', value: (r: Row) => r.format(r.v.requests) },
      { header: 'uploads/requests', value: (r: Row) => times(ratio(r.v.uploads, r.v.requests)) },
    ],
    rows,
  );
  console.log(`orders accepted: ${o.accepted} of ${3 * o.repeats * o.orders + 200} (202s)`);
}

if (process.argv[2] === 'clients') {
  const [side, url, n] = process.argv.slice(3);
  await clients(side as Side, new URL(url as string), Number(n));
} else await main();
