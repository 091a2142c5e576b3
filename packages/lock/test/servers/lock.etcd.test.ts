// The etcd lock backend (EtcdLock) against a private etcd: the shared session-lock suite (counter, FIFO,
// re-entry, fencing, kill -9, lease loss, restart with waiters, abort).
import { EtcdServer } from '../../../../harness/etcd-server.ts';
import { EtcdLock } from '../../src/index.ts';
import { asEtcdAdmin, etcdDeleteAll, etcdPrefix } from '../support/backend-admin.ts';
import { sessionLockSuite, type TestLock } from '../support/session-lock-suite.ts';

sessionLockSuite<EtcdServer>({
  name: 'etcd',
  start: () => EtcdServer.start(),
  connect: async (server, ttlSeconds, onEvent) =>
    (await EtcdLock.connect({
      endpoints: server.endpoint,
      leaseTtlSeconds: ttlSeconds,
      heartbeatMs: 500,
      ...(onEvent ? { onEvent } : {}),
    })) as unknown as TestLock,
  queued: (server, name) =>
    asEtcdAdmin(
      server.endpoint,
      async (etcd) => (await etcd.getAll().prefix(etcdPrefix(name)).keys()).length,
    ),
  endpoint: (server) => server.endpoint,
  deleteAll: (server, name) => etcdDeleteAll(server.endpoint, name),
});
