// Giving a failed-over master of a test cluster a replica again, as an operator would: a fresh node
// joined with redis-cli --cluster add-node --cluster-slave, in sync before it returns.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { until } from '../../harness/async.ts';
import { clusterPort, type RedisCluster, startNode } from '../../harness/redis-cluster.ts';
import type { RedisServer } from '../../harness/redis-server.ts';

const run = promisify(execFile);

/** Starts a node and makes it a replica of the master at `master`; it is stopped with the cluster. */
export async function addReplica(cluster: RedisCluster, master: string): Promise<RedisServer> {
  const target = (await cluster.nodes()).find((n) => n.address === master && n.role === 'master');
  if (!target) throw new Error(`${master} is not a master`);
  const server = await startNode(await clusterPort(new Set(cluster.servers.map((s) => s.port))));
  cluster.servers.push(server);
  await run('redis-cli', [
    '--cluster',
    'add-node',
    `127.0.0.1:${server.port}`,
    master,
    '--cluster-slave',
    '--cluster-master-id',
    target.id,
  ]);
  await until(
    `the new replica of ${master} in sync`,
    async () => (await server.client().info('replication')).includes('master_link_status:up'),
    { timeoutMs: 60_000, everyMs: 100 },
  );
  return server;
}
