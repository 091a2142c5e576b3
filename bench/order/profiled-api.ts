// The bench's API entry (bench/order/bench-api.ts) spawned under `node --cpu-prof`, for
// BENCH_PROFILE=1 (bench/order/phase-profile.ts): harness/service.ts cannot pass --cpu-prof.
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';

/** The bench's API entry point (bench/order/bench-api.ts: the API plus the /bench routes), from the repository root. */
export const BENCH_API = 'bench/order/bench-api.ts';

/**
 * Runs the bench's API entry (as `entry`) under `node --cpu-prof` (Node refuses --cpu-prof in NODE_OPTIONS, so
 * harness/service.ts's spawnService cannot); resolves once /healthz answers. The profile is written into
 * `dir` when the process exits (stop() sends SIGTERM: the service shuts down and exits normally).
 */
export async function spawnProfiled(
  entry: 'api' | 'main',
  env: Record<string, string>,
  port: number,
  dir: string,
  cwd: string,
): Promise<{ url: string; pid: number | undefined; stop(): Promise<void> }> {
  const proc = spawn(
    process.execPath,
    ['--cpu-prof', `--cpu-prof-dir=${dir}`, '--import', 'tsx', BENCH_API, entry],
    {
      cwd,
      env: { ...process.env, ...env, PORT: String(port) },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let err = '';
  proc.stderr?.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`${entry} exited at start: ${err}`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error(`${entry} did not start: ${err}`);
    }
    await sleep(50);
  }
  return {
    url,
    pid: proc.pid,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      await exited;
    },
  };
}
