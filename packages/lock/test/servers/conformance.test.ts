// The conformance suite (../conformance/suite.ts) against the etcd and ZooKeeper backends, each on a
// private server: the same assertions as the Redis lock kinds.
import { EtcdServer } from '../../../../harness/etcd-server.ts';
import { ZooKeeperServer } from '../../../../harness/zookeeper-server.ts';
import { conformanceSuite } from '../conformance/suite.ts';
import { etcdDeleteAll, zkDeleteAll } from '../support/backend-admin.ts';

conformanceSuite({
  kind: 'etcd',
  leaseMs: 3000,
  start: async () => {
    const server = await EtcdServer.start();
    return { ports: [server.port], stop: () => server.stop() };
  },
  breakHold: (ports, name) => etcdDeleteAll(`http://127.0.0.1:${ports[0]}`, name),
});

conformanceSuite({
  kind: 'zookeeper',
  leaseMs: 4000,
  start: async () => {
    const server = await ZooKeeperServer.start();
    return { ports: [server.port], stop: () => server.stop() };
  },
  breakHold: (ports, name) => zkDeleteAll(`127.0.0.1:${ports[0]}`, name),
});
