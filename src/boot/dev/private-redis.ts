// A development run's own redis-server, started where the default REDIS_URL finds nothing: the
// system's binary on PATH, bound to that address, its data (append-only file) under the dev folder.
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { StartupError } from '../startup-error.ts';
import { findExecutable } from './executable.ts';
import { waitUntilAnswering } from './probe.ts';

/** How to get redis-server, for the one line of a development run that has none. */
export const REDIS_INSTALL_HINT =
  'install redis-server (Debian: apt-get install redis-server; macOS: brew install redis; or npm run setup) or set REDIS_URL';

/**
 * Starts redis-server at host:port with its files in `dir`; resolves once it answers, to the stop
 * that ends it. In a process group of its own (a Ctrl-C in the terminal reaches the service, which
 * stops it after its own graceful stop), and killed when this process exits however it does.
 */
export async function startPrivateRedis(
  host: string,
  port: number,
  dir: string,
): Promise<() => Promise<void>> {
  const bin = findExecutable('redis-server');
  if (!bin) {
    throw new StartupError(
      `no Redis answers at ${host}:${port} and redis-server is not installed: ${REDIS_INSTALL_HINT}`,
    );
  }
  mkdirSync(dir, { recursive: true });
  const args = ['--bind', host, '--port', String(port), '--dir', dir, '--appendonly', 'yes', '--save', ''];
  const child = spawn(bin, args, { detached: true, stdio: 'ignore' });
  const exited = new Promise<string>((resolve) => {
    child.once('error', (err) => resolve(err.message));
    child.once('exit', (code, signal) => resolve(`redis-server exited (${signal ?? `code ${code}`})`));
  });
  const kill = () => child.kill('SIGTERM');
  process.once('exit', kill);
  try {
    await waitUntilAnswering(host, port, exited, 30_000);
  } catch (err) {
    kill();
    throw new StartupError(
      `the private redis-server did not start at ${host}:${port}: ${(err as Error).message}`,
    );
  }
  return async () => {
    process.off('exit', kill);
    if (child.exitCode !== null || child.signalCode !== null) return;
    kill();
    await exited;
  };
}
