// What the partition scenarios share: a scenario body on its own world (always closed), a Redis in a
// namespace with its commit log, a sale under a load of one-unit orders from distinct buyers, the
// service's view of its shard locks, and the checks at the end.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { lockKeys } from '@flashsale/lock/toolkit';
import { until } from '../../harness/async.ts';
import { RedisServer } from '../../harness/redis-server.ts';
import type { Spawned } from '../../harness/service.ts';
import { shardKeys } from '../../src/inventory/keys.ts';
import { loadSale } from '../../src/inventory/sale.ts';
import type { RedisClient } from '../../src/redis/connection.ts';
import {
  emptyResult,
  Load,
  log,
  putSale,
  randomId,
  type ScenarioResult,
  scenarioError,
  Targets,
} from '../faults/lib.ts';
import { fencedCount } from '../faults/s4-fencing.ts';
import { checkInvariants } from './checks.ts';
import { CommitLog } from './commit-log.ts';
import type { Host } from './netns.ts';
import { place, startWorld, type World } from './world.ts';

export { log };

/**
 * Runs `body` on a fresh world for scenario `id`: an exception becomes a failure of the result, and
 * the world (namespaces, processes, database) is removed afterwards whatever happened.
 */
export async function scenario(
  id: string,
  name: string,
  env: Record<string, string>,
  body: (world: World, result: ScenarioResult) => Promise<void>,
): Promise<ScenarioResult> {
  const result = emptyResult(id, name);
  const world = await startWorld(id, env);
  try {
    await body(world, result);
  } catch (err) {
    scenarioError(result, err);
  } finally {
    await world.close();
  }
  return result;
}

/** A redis-server in namespace `host` (extra env: libfaketime's), stopped with the world. */
export async function redisAt(world: World, host: Host, env?: Record<string, string>): Promise<RedisServer> {
  return world.own(await RedisServer.start({ place: place(host), port: 6379, env }));
}

/**
 * One Redis in a namespace of its own (extra env: libfaketime's) with its commit log, the writer and
 * two API processes (A, B) each in a namespace; the writer and the APIs start side by side.
 */
export async function redisStack(world: World, redisEnv?: Record<string, string>) {
  const net = world.net;
  const server = await redisAt(world, net.host('redis'), redisEnv);
  world.env.REDIS_URL = server.url;
  const commits = world.own(await CommitLog.watch([{ host: server.place.ip, port: server.port }]));
  const [, apiA, apiB] = await Promise.all([
    world.spawn('worker', net.host('writer')),
    world.spawn('api', net.host('api-a')),
    world.spawn('api', net.host('api-b')),
  ]);
  return { redis: server.client(), commits, apiA, apiB, targets: new Targets([apiA.url, apiB.url]) };
}

/** A sale created through the API, its first shard's lock keys, and the load to start on it. */
export async function saleWithLoad(
  targets: Targets,
  redis: RedisClient,
  spec: { prefix: string; stock: number; shards: number; orders: number; ratePerSec: number },
) {
  const productId = randomId(spec.prefix);
  await putSale(targets, productId, { stock: spec.stock, shards: spec.shards });
  const sale = await loadSale(redis, productId);
  if (!sale) throw new Error(`sale ${productId} not created`);
  const lockName = shardKeys(sale.shardKeys[0] as string).lock;
  const startLoad = () =>
    new Load({
      targets,
      productId,
      orders: spec.orders,
      concurrency: 48,
      ratePerSec: spec.ratePerSec,
      // One logical order per buyer, sent once (no retry): each row maps to one answer.
      order: (i) => ({ userId: `u${i}`, quantity: 1 }),
    });
  return { productId, sale, lockName, lock: lockKeys(lockName), startLoad };
}

/** Whether process `pid` is stopped (SIGSTOP): state T in /proc/<pid>/stat. */
export function stopped(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('T');
  } catch {
    return false;
  }
}

/** SIGSTOP, returning once the kernel shows the process stopped. */
export async function pause(proc: Spawned): Promise<void> {
  proc.proc.kill('SIGSTOP');
  await until('the process to stop', () => stopped(proc.proc.pid as number), { everyMs: 5 });
}

export function resume(proc: Spawned): void {
  proc.proc.kill('SIGCONT');
}

/** Fenced decrements over the API processes (their /metrics). */
export async function fencedTotal(apis: Spawned[]): Promise<number> {
  let n = 0;
  for (const a of apis) n += await fencedCount(a.url);
  return n;
}

/** The end of every scenario: load done, then the four invariants. */
export async function finish(
  result: ScenarioResult,
  world: World,
  o: {
    targets: Targets;
    redis: RedisClient;
    commits: CommitLog;
    load: Load;
    productId: string;
    total: number;
  },
): Promise<void> {
  const logs = await o.load.done;
  // PARTITIONS_LOGS=<dir>: every process's output, to read what a failure looked like from inside.
  const dir = process.env.PARTITIONS_LOGS;
  if (dir) {
    mkdirSync(dir, { recursive: true });
    for (const [k, out] of world.procs.outputs().entries())
      writeFileSync(join(dir, `${result.id}-${k}.log`), out);
  }
  await checkInvariants(result, {
    targets: o.targets,
    redis: o.redis,
    pool: world.pool,
    commits: o.commits,
    logs,
    productId: o.productId,
    total: o.total,
  });
  await o.commits.stop();
}

export { CommitLog, Targets };
