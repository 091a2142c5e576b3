// Runs an entry point: boot and start, one stderr line and exit 1 on a startup problem, and a
// graceful stop on SIGTERM/SIGINT (shutdown() within SHUTDOWN_TIMEOUT_MS, else exit 1).
import type { WorkerConfig } from '../config/load.ts';
import type { Runtime } from './boot.ts';
import { shutdown } from './shutdown.ts';
import { StartupError } from './startup-error.ts';

/**
 * Boots (`boot`), starts the entry point's parts (`start`), then waits for a signal to stop.
 *
 * @example
 * await run('api', () => boot('api'), serveApi);
 */
export async function run<C extends WorkerConfig>(
  role: string,
  boot: () => Promise<Runtime<C>>,
  start: (rt: Runtime<C>) => Promise<void>,
): Promise<void> {
  let rt: Runtime<C>;
  try {
    rt = await boot();
    await start(rt);
  } catch (err) {
    const line = err instanceof StartupError ? err.message : `failed to start: ${(err as Error).message}`;
    process.stderr.write(`flashsale ${role}: ${line}\n`);
    process.exit(1);
  }
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    rt.logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), rt.config.shutdown.timeoutMs);
    force.unref();
    await shutdown(rt);
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}
