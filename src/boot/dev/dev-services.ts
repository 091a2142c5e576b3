// `npm start` on a bare machine: in a development run only, a private redis-server and an embedded
// PostgreSQL start where the default REDIS_URL / DATABASE_URL find nothing; one line says each.
import { join, relative } from 'node:path';
import { isDevRun, type WorkerConfig } from '../../config/load.ts';
import { startEmbeddedPostgres } from './embedded-postgres.ts';
import { startPrivateRedis } from './private-redis.ts';
import { answers } from './probe.ts';

/** A server this run started: what it is, and its stop. */
type Started = { what: string; stop: () => Promise<void> };

/** Host and port of a URL, with the scheme's default port. */
function address(url: string, defaultPort: number): { host: string; port: number } {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port || defaultPort) };
}

/** Starts the server `start` at `url`'s address when nothing answers there; announces it in one line. */
async function startWhereNothingAnswers(
  url: string,
  defaultPort: number,
  what: string,
  dir: string,
  start: (host: string, port: number, dir: string) => Promise<() => Promise<void>>,
): Promise<Started | undefined> {
  const { host, port } = address(url, defaultPort);
  if (await answers(host, port)) return undefined;
  const stop = await start(host, port, dir);
  // Inside the working directory (the default .dev): relative, as a person would type it.
  const inside = relative(process.cwd(), dir);
  const shown = inside && !inside.startsWith('..') ? inside : dir;
  process.stdout.write(
    `flashsale: nothing answered at ${host}:${port}, so this development run started ${what} there (data in ${shown}; it stops with the service)\n`,
  );
  return { what, stop };
}

/**
 * In a development run (FLASHSALE_DEV_RUN=1, not production) whose REDIS_URL / DATABASE_URL are
 * unset (the defaults), starts a private redis-server and an embedded PostgreSQL where nothing answers
 * at those defaults. Resolves to their stops, which the service runs last (after its own stop).
 * Anything else (a set URL, production) starts nothing: an unreachable server is then reported.
 *
 * @example
 * const stops = await startDevServices(config, process.env); // [] when Redis and Postgres answer
 */
export async function startDevServices(
  config: WorkerConfig,
  env: NodeJS.ProcessEnv,
): Promise<Array<() => Promise<void>>> {
  if (!isDevRun(config.mode)) return [];
  const dir = config.mode.devDataDir;
  const started: Started[] = [];
  try {
    // Redis first: without redis-server the run stops at once, before an initdb.
    if (!env.REDIS_URL && !config.redis.clusterNodes) {
      const redis = await startWhereNothingAnswers(
        config.redis.url,
        6379,
        'a private redis-server',
        join(dir, 'redis'),
        startPrivateRedis,
      );
      if (redis) started.push(redis);
    }
    if (!env.DATABASE_URL) {
      const pg = await startWhereNothingAnswers(
        config.postgres.url,
        5432,
        'an embedded PostgreSQL',
        join(dir, 'postgres'),
        startEmbeddedPostgres,
      );
      if (pg) started.push(pg);
    }
  } catch (err) {
    await Promise.all(started.map((s) => s.stop().catch(() => {})));
    throw err;
  }
  // Stopped in reverse order of start, like the service's own closers.
  return started.reverse().map((s) => s.stop);
}
