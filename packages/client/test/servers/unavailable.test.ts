// The client through a fault: under REDIS_WAIT_REPLICAS=1 the replica stops acknowledging (SIGSTOP),
// so the service withdraws every order and answers 503 unavailable (nothing sold). The client retries
// under its one Idempotency-Key with backoff, and once the replica is back ends with exactly one order.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { until } from '../../../../harness/async.ts';
import { RedisServer } from '../../../../harness/redis-server.ts';
import {
  createSale,
  drained,
  type Infra,
  NO_LOAD_SHEDDING,
  type Service,
  startInfra,
  startService,
} from '../../../../harness/service.ts';
import { FlashsaleClient, type Progress } from '../../src/index.ts';

describe('placeOrder while the service answers 503 unavailable', () => {
  let infra: Infra;
  let replica: RedisServer;
  let svc: Service;
  before(async () => {
    infra = await startInfra(NO_LOAD_SHEDDING);
    replica = await RedisServer.start();
    await replica.client().replicaof('127.0.0.1', infra.redis.port);
    await until('the replica in sync', async () =>
      (await replica.client().info('replication')).includes('master_link_status:up'),
    );
    svc = await startService(infra, { REDIS_WAIT_REPLICAS: '1', REDIS_WAIT_TIMEOUT_MS: '200' });
  });
  after(async () => {
    replica?.resume();
    await svc?.stop();
    await replica?.stop();
    await infra?.stop();
  });

  it('retries under one key until the replica answers again, then holds exactly one order', async () => {
    await createSale(svc.url, 'c-503', { stock: 5, shards: 1 });
    const seen: Progress[] = [];
    const client = new FlashsaleClient({
      baseUrl: svc.url,
      userId: 'olga',
      retry: { baseDelayMs: 50, maxDelayMs: 400, maxAttempts: 1000 },
    });
    replica.pause();
    const order = client.placeOrder({ productId: 'c-503' }, { onProgress: (p) => seen.push(p) });
    try {
      await until(
        'a 503 unavailable retried',
        () => seen.some((p) => p.phase === 'retrying' && p.reason === 'unavailable'),
        { timeoutMs: 60_000, everyMs: 20, describe: () => JSON.stringify(seen) },
      );
    } finally {
      replica.resume();
    }
    const result = await order;
    assert.equal(result.outcome, 'ordered', JSON.stringify(result));
    const state = await drained(svc.url, 'c-503');
    assert.deepEqual([state.sold, state.available], [1, 4]);
    assert.equal(await infra.rows('c-503'), 1);
  });
});
