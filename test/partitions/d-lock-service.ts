// Scenario d: etcd or ZooKeeper (LOCK_BACKEND) cut off from a lock holder past its session timeout.
// Redis, the lock service, two API processes and the writer each in a namespace; a one-shard sale
// under load. The test cuts API A from the lock service, and keeps the cut only if the service's
// queue head for the shard lock is then A's session (A held, or was being handed, the lock: it can no
// longer release it). The cut lasts until the service has expired A's session (lease / session
// timeout, 10 s) and B has decremented past A's fencing token; then it heals and A comes back.

import { until } from '../../harness/async.ts';
import { EtcdServer } from '../../harness/etcd-server.ts';
import { ZooKeeperServer } from '../../harness/zookeeper-server.ts';
import { type ScenarioResult, sleep } from '../faults/lib.ts';
import { CommitLog, fencedTotal, finish, log, redisAt, saleWithLoad, scenario, Targets } from './kit.ts';
import { EtcdView, type LockView, ZooKeeperView } from './lock-views.ts';
import type { Host, Net } from './netns.ts';
import { place, type World } from './world.ts';

const STOCK = 1200;
const ORDERS = 3000;
/** Cuts tried before one catches A at the head of the lock's queue. */
const TRIES = 200;

type Backend = 'etcd' | 'zookeeper';

/** The lock service in namespace `host`, the service's environment for it, and the test's view. */
async function lockService(world: World, backend: Backend, host: Host) {
  if (backend === 'etcd') {
    const etcd = world.own(await EtcdServer.start(place(host)));
    return { env: { ETCD_ENDPOINTS: etcd.endpoint }, view: new EtcdView(etcd.endpoint) };
  }
  const zk = world.own(await ZooKeeperServer.start(place(host)));
  const view = new ZooKeeperView(host.ip, zk.port);
  return { env: { ZOOKEEPER_CONNECT: zk.connectString }, view };
}

/** A's session on the lock service: the one it opened at start (etcd lease) or from its address (ZooKeeper). */
async function sessionOf(view: LockView, before: Set<string>, host: Host): Promise<string> {
  if (view instanceof ZooKeeperView) {
    return until('API A to have a ZooKeeper session', () => view.sessionFrom(host.ip));
  }
  return until('API A to have an etcd lease', async () =>
    [...(await view.sessions())].find((s) => !before.has(s)),
  );
}

/** The writer and API B side by side, then API A alone (its session is the one that appears then). */
async function processes(world: World, view: LockView) {
  const net = world.net;
  const [, apiB] = await Promise.all([
    world.spawn('worker', net.host('writer')),
    world.spawn('api', net.host('api-b')),
  ]);
  const before = await view.sessions();
  const hostA = net.host('api-a');
  const apiA = await world.spawn('api', hostA);
  const sessionA = await sessionOf(view, before, hostA);
  return { apiA, apiB, hostA, sessionA, targets: new Targets([apiA.url, apiB.url]) };
}

/** Cuts A from the lock service, kept only once the service's head for the lock is then A's session; the tries. */
async function cutAtHead(
  net: Net,
  hostA: Host,
  lockHost: Host,
  view: LockView,
  lock: string,
  sessionA: string,
) {
  for (let tries = 1; ; tries++) {
    net.cut(hostA, [lockHost]);
    if ((await view.head(lock)) === sessionA) return tries;
    net.heal();
    if (tries >= TRIES) throw new Error(`no cut of ${TRIES} caught API A at the head of the lock's queue`);
    await sleep(20 + Math.random() * 60);
  }
}

/** Heals the cut; whether A opened a new session (within 30 s). */
async function healAndReconnect(net: Net, view: LockView): Promise<boolean> {
  const others = await view.sessions();
  net.heal();
  return until(
    'API A to open a new session',
    async () => [...(await view.sessions())].some((x) => !others.has(x)) || undefined,
    { timeoutMs: 30_000, everyMs: 200 },
  ).catch(() => false);
}

export function lockServiceCut(id: string, backend: Backend): Promise<ScenarioResult> {
  const name = `${backend} cut off from a lock holder past its session timeout`;
  const env = { LOCK_BACKEND: backend, LOCK_WAIT_MS: '2000' };
  return scenario(id, name, env, async (world, result) => {
    const net = world.net;
    const server = await redisAt(world, net.host('redis'));
    const redis = server.client();
    const lockHost = net.host('lock');
    const { env: lockEnv, view } = await lockService(world, backend, lockHost);
    Object.assign(world.env, { REDIS_URL: server.url }, lockEnv);
    const commits = world.own(await CommitLog.watch([{ host: server.place.ip, port: server.port }]));
    const { apiA, apiB, hostA, sessionA, targets } = await processes(world, view);
    const spec = { prefix: `pd${backend[0]}`, stock: STOCK, shards: 1, orders: ORDERS, ratePerSec: 200 };
    const s = await saleWithLoad(targets, redis, spec);
    const fenceKey = `${s.sale.shardKeys[0]}:fence:${backend}`;
    const load = s.startLoad();
    await load.reached(ORDERS * 0.1);

    const tries = await cutAtHead(net, hostA, lockHost, view, s.lockName, sessionA);
    const fenceAtCut = Number(await redis.get(fenceKey));
    const cutAt = Date.now();
    log(id, `A cut off from ${backend} while at the head of the lock (try ${tries}, fence ${fenceAtCut})`);
    await until(
      `${backend} to expire A's session and B to decrement after it`,
      async () =>
        !(await view.sessions()).has(sessionA) &&
        (await view.head(s.lockName)) !== sessionA &&
        Number(await redis.get(fenceKey)) > fenceAtCut,
      { timeoutMs: 40_000, everyMs: 200 },
    );
    const expiredAfterMs = Date.now() - cutAt;
    const back = await healAndReconnect(net, view);
    if (!back) result.notes.push(`API A did not open a new ${backend} session within 30 s of the heal`);
    const fenced = await fencedTotal([apiA, apiB]);
    result.details.cut = { tries, fenceAtCut, expiredAfterMs, sessionA, reconnected: back };
    result.details.fencedDecrements = fenced;
    result.faults = `API A cut from ${backend} while at the head of the shard lock's queue, ${(expiredAfterMs / 1000).toFixed(1)} s until its session expired and B decremented past it, then healed; ${fenced} decrements fenced`;
    await finish(result, world, { targets, redis, commits, load, productId: s.productId, total: STOCK });
  });
}
