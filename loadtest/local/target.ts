// The service under load: a private stack (redis-server on a free port, a fresh Postgres database,
// the service as a child process — the test harness's startInfra + spawnService) unless BASE_URL
// points at one already running. Plus the admin calls the scenarios make.
import { setTimeout as sleep } from 'node:timers/promises';
import { ADMIN_TOKEN, type Infra, type Spawned, spawnService, startInfra } from '../../harness/service.ts';

export interface Target {
  baseUrl: string;
  adminToken: string;
  /** Rows in Postgres for the product; null when the database is not ours to read (BASE_URL). */
  rows(productId: string): Promise<number | null>;
  /** Lines the service logged at error level or above (only for a service we started). */
  errorLines(): string[] | null;
  /** How the service we started ended, if it did (null while it runs, or for BASE_URL). */
  exited(): string | null;
  /** The service's recent output, for a failure report. */
  outputTail(lines: number): string;
  stop(): Promise<void>;
}

export async function startTarget(vars: { baseUrl?: string; adminToken?: string }): Promise<Target> {
  if (vars.baseUrl) {
    if (!vars.adminToken)
      throw new Error('ADMIN_TOKEN is not set: it must be the token the service at BASE_URL runs with');
    return {
      baseUrl: vars.baseUrl.replace(/\/+$/, ''),
      adminToken: vars.adminToken,
      rows: async () => null,
      errorLines: () => null,
      exited: () => null,
      outputTail: () => '',
      stop: async () => {},
    };
  }
  const infra: Infra = await startInfra();
  let svc: Spawned;
  try {
    // Service settings (LOCK_WAIT_MS, WRITER_BATCH_SIZE, ...) pass through from this environment.
    svc = await spawnService(infra, 'main', { LOG_LEVEL: process.env.LOG_LEVEL ?? 'info' });
  } catch (err) {
    await infra.stop();
    throw err;
  }
  return {
    baseUrl: svc.url,
    adminToken: ADMIN_TOKEN,
    rows: (productId) => infra.rows(productId),
    errorLines: () =>
      svc
        .output()
        .split('\n')
        .filter((line) => {
          try {
            return ((JSON.parse(line) as { level?: number }).level ?? 0) >= 50;
          } catch {
            return false;
          }
        }),
    exited: () =>
      svc.proc.exitCode !== null || svc.proc.signalCode !== null
        ? `exited with ${svc.proc.signalCode ?? `code ${svc.proc.exitCode}`}`
        : null,
    outputTail: (n) => svc.output().split('\n').slice(-n).join('\n'),
    async stop() {
      await svc.stop().catch(() => svc.kill());
      await infra.stop();
    },
  };
}

export interface AdminResult {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: admin answers are JSON of many shapes; each scenario asserts the fields it reads
  body: any;
  text: string;
  ms: number;
}

export async function adminCall(
  t: Target,
  method: string,
  path: string,
  body?: unknown,
): Promise<AdminResult> {
  const started = performance.now();
  try {
    const res = await fetch(`${t.baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${t.adminToken}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    let parsed: unknown = null;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = null;
    }
    return { status: res.status, body: parsed, text, ms: performance.now() - started };
  } catch (err) {
    return { status: 0, body: null, text: String(err), ms: performance.now() - started };
  }
}

export async function waitForReady(t: Target, timeoutSec: number): Promise<void> {
  const deadline = Date.now() + timeoutSec * 1000;
  let last = '';
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`${t.baseUrl}/readyz`, { signal: AbortSignal.timeout(5000) });
      if (res.status === 200) return;
      last = `${res.status} ${(await res.text()).slice(0, 200)}`;
    } catch (err) {
      last = String(err);
    }
    await sleep(1000);
  }
  throw new Error(`${t.baseUrl}/readyz not ready after ${timeoutSec}s (last answer: ${last})`);
}
