// An API process without the writer (boot + startApi only, as src/api.ts runs it): orders stay
// `reserved` until a writer is started on the same runtime with startWriter().
import type { AddressInfo } from 'node:net';
import type { Infra } from '../../harness/service.ts';
import { startApi } from '../../src/boot/api.ts';
import { boot, type Runtime } from '../../src/boot/boot.ts';
import { shutdown } from '../../src/boot/shutdown.ts';
import { startWorker } from '../../src/boot/worker.ts';

export interface ApiOnly {
  url: string;
  rt: Runtime;
  /** Starts the writer and sweeper in this runtime (like src/worker.ts). */
  startWriter(): Promise<void>;
  stop(): Promise<void>;
}

export async function startApiOnly(infra: Infra, env: Record<string, string> = {}): Promise<ApiOnly> {
  const rt = await boot('test-api', { ...infra.env, ...env });
  const server = await startApi(rt);
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    rt,
    startWriter: () => startWorker(rt),
    stop: () => shutdown(rt),
  };
}
