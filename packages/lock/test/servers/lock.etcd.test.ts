// The etcd lock backend (EtcdLock) against a private etcd: the shared session-lock suite (counter, FIFO,
// re-entry, fencing, kill -9, lease loss, restart with waiters, abort).
import { after } from 'node:test';
import { Etcd3 } from 'etcd3';
import { EtcdServer } from '../../../../test/support/etcd-server.ts';
import { EtcdLock } from '../../src/index.ts';
import { sessionLockSuite, type TestLock } from '../support/session-lock-suite.ts';

const admins = new Map<EtcdServer, Etcd3>();
function admin(server: EtcdServer): Etcd3 {
  let client = admins.get(server);
  if (!client) {
    client = new Etcd3({ hosts: server.endpoint });
    admins.set(server, client);
  }
  return client;
}
after(() => {
  for (const client of admins.values()) client.close();
});

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
  queued: async (server, name) =>
    (await admin(server).getAll().prefix(`flashsale-lock/${name}/`).keys()).length,
  endpoint: (server) => server.endpoint,
  deleteAll: async (server, name) => {
    await admin(server).delete().prefix(`flashsale-lock/${name}/`);
  },
});
