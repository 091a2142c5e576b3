// Scenario a: a Redis Cluster master cut off from the other cluster nodes, but still reachable by
// one API process, for longer than the cluster's node timeout (1 s). Six redis-servers (3 masters,
// 3 replicas), two API processes and the writer, each in a namespace; a six-shard sale under load.
// The master of shard 0 is cut from the five other nodes, from API B and from the writer; API A
// still reaches it (the minority side has a client, as in Jepsen's Redis Cluster runs). The cut lasts
// until the majority has promoted its replica and the cut master has stopped taking writes itself;
// then it heals, and the old master must come back as the new master's replica.

import { check, type ScenarioResult, saleStatus } from '../faults/lib.ts';
import { until } from '../support/async.ts';
import { RedisCluster } from '../support/redis-cluster.ts';
import type { RedisServer } from '../support/redis-server.ts';
import { CommitLog, finish, log, saleWithLoad, scenario, Targets } from './kit.ts';
import type { Host } from './netns.ts';
import { place } from './world.ts';

const STOCK = 2000;
const ORDERS = 3000;
/**
 * REDIS_WAIT_REPLICAS of the API processes (PARTITIONS_WAIT_REPLICAS overrides): 1, as the issue's
 * failover; 0 lets a cut master acknowledge orders its replica never sees.
 */
const WAIT_REPLICAS = process.env.PARTITIONS_WAIT_REPLICAS ?? '1';

/** The role and state of every node as `server` sees it: `ip:port` → flags (CLUSTER NODES). */
async function seen(server: RedisServer): Promise<Map<string, string>> {
  const text = String(await server.client().call('cluster', 'nodes'));
  return new Map(
    text
      .trim()
      .split('\n')
      .map((line) => {
        const [, addr, flags] = line.split(' ');
        return [(addr ?? '').split('@')[0] ?? '', flags ?? ''] as [string, string];
      }),
  );
}

const ipOf = (address: string) => address.split(':')[0] as string;

export function clusterMasterCut(): Promise<ScenarioResult> {
  const env = { REDIS_WAIT_REPLICAS: WAIT_REPLICAS, REDIS_WAIT_TIMEOUT_MS: '500' };
  const name = `Redis Cluster master cut off from its peers, reachable by one API (WAIT ${WAIT_REPLICAS})`;
  return scenario('a', name, env, async (world, result) => {
    const net = world.net;
    const nodes: Host[] = Array.from({ length: 6 }, (_, k) => net.host(`redis${k + 1}`));
    const cluster = world.own(await RedisCluster.start(nodes.map(place)));
    const redis = cluster.client();
    world.env.REDIS_CLUSTER_NODES = cluster.seeds;
    const commits = world.own(await CommitLog.watch(cluster.nodeList));
    const writer = net.host('writer');
    const hostA = net.host('api-a');
    const hostB = net.host('api-b');
    const [, apiA, apiB] = await Promise.all([
      world.spawn('worker', writer),
      world.spawn('api', hostA),
      world.spawn('api', hostB),
    ]);
    const targets = new Targets([apiA.url, apiB.url]);
    const s = await saleWithLoad(targets, redis, {
      prefix: 'pa',
      stock: STOCK,
      shards: 6,
      orders: ORDERS,
      ratePerSec: 250,
    });
    const status = await saleStatus(targets, s.productId);
    const victimAddress = ((status.shards as { master: string }[])[0] as { master: string }).master;
    const victim = cluster.server(victimAddress);
    const victimHost = nodes.find((h) => h.ip === ipOf(victimAddress)) as Host;
    const before = await cluster.nodes();
    const victimId = before.find((n) => n.address === victimAddress)?.id;
    const replica = before.find((n) => n.role === 'slave' && n.masterId === victimId)?.address;
    if (!victimId || !replica) throw new Error(`no replica of ${victimAddress}: ${JSON.stringify(before)}`);
    const load = s.startLoad();
    await load.reached(ORDERS * 0.15);

    net.cut(victimHost, [...nodes.filter((h) => h !== victimHost), hostB, writer]);
    const cutAt = Date.now();
    log('a', `master ${victimAddress} cut off from its peers, API B and the writer; API A still reaches it`);
    const majority = cluster.servers.find((x) => x !== victim) as RedisServer;
    // The majority promotes the cut master's replica; the cut master, alone, stops taking writes.
    await until(
      "the majority to promote the cut master's replica",
      async () => {
        const view = await seen(majority);
        const victimFlags = view.get(victimAddress) ?? '';
        const failed = victimFlags.includes('fail') && !victimFlags.includes('fail?');
        return failed && view.get(replica)?.includes('master');
      },
      { timeoutMs: 30_000, everyMs: 100 },
    );
    await until(
      'the cut master to stop taking writes (cluster_state:fail on its side)',
      async () => String(await victim.client().call('cluster', 'info')).includes('cluster_state:fail'),
      { timeoutMs: 30_000, everyMs: 100 },
    );
    const cutMs = Date.now() - cutAt;
    // What the cut master took on its own (API A's orders): its replica never saw these.
    const alone = commits.committedOn(victimAddress, cutAt);
    net.heal();
    await until(
      'the old master to rejoin as a replica',
      async () => (await seen(majority)).get(victimAddress)?.includes('slave') === true,
      { timeoutMs: 30_000, everyMs: 100 },
    );
    await cluster.ready();
    log('a', `healed after ${cutMs} ms; ${victimAddress} is a replica again`);
    result.details.partition = { victim: victimAddress, promoted: replica, cutMs, reservedAlone: alone };
    result.faults = `master ${victimAddress} (shard 0) cut from the 5 other nodes, API B and the writer for ${(cutMs / 1000).toFixed(1)} s (node timeout 1 s) while API A still reached it (${alone.length} reservations made there alone); healed, it rejoined as a replica; REDIS_WAIT_REPLICAS=${WAIT_REPLICAS}`;
    await finish(result, world, { targets, redis, commits, load, productId: s.productId, total: STOCK });
    // Those reservations died with the cut master's data set: none may have become a row.
    const persisted = await world.pool.query<{ id: string }>('select id from orders where id = any($1)', [
      alone,
    ]);
    result.details.reservedAlonePersisted = persisted.rows.map((r) => r.id);
    check(
      result,
      persisted.rows.length === 0,
      `${persisted.rows.length} orders reserved only on the cut master have rows: ${persisted.rows.slice(0, 3).map((r) => r.id)}`,
    );
  });
}
