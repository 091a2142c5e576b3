// The lock services a shard lock can run on besides Redis (LOCK_BACKEND=etcd|zookeeper), each as a
// private server and the environment that points a service at it; shared by tests and benchmarks.
import type { LockBackendName } from '../src/inventory/shard-locks.ts';
import { EtcdServer } from './etcd-server.ts';
import { ZooKeeperServer } from './zookeeper-server.ts';

export interface LockServer {
  name: Exclude<LockBackendName, 'redis'>;
  /** Starts a private server; `env` points a service's shard locks at it. */
  start(): Promise<{ env: Record<string, string>; stop(): Promise<void> }>;
}

export const LOCK_SERVERS: LockServer[] = [
  {
    name: 'etcd',
    start: async () => {
      const server = await EtcdServer.start();
      return { env: { ETCD_ENDPOINTS: server.endpoint }, stop: () => server.stop() };
    },
  },
  {
    name: 'zookeeper',
    start: async () => {
      const server = await ZooKeeperServer.start();
      return { env: { ZOOKEEPER_CONNECT: server.connectString }, stop: () => server.stop() };
    },
  },
];
