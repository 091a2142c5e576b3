// Scenario 6: duplicate submissions. 20 Idempotency-Keys, each sent 50 times at once (1,000
// concurrent requests spread over two API processes): each key must make exactly one order, and
// every answer for a key must name that same order. Then both API processes are killed and
// restarted, and every key is sent once more: the same answer, still one order. The same key with
// another body is refused (422) and creates nothing. Last, at library level, a claim whose reply is
// lost to a broken connection (ioredis sends it again) must still run once and answer.
import { Redis } from 'ioredis';
import { RedisServer } from '../../harness/redis-server.ts';
import type { Answer } from '../../src/http/errors.ts';
import { newAttempt } from '../../src/orders/attempt.ts';
import { fingerprint, idempotent, type KeyedOrder } from '../../src/orders/idempotency.ts';
import {
  check,
  emptyResult,
  type OrderLog,
  type Outcome,
  putSale,
  randomId,
  type ScenarioResult,
  submitOrder,
  submitShedRetried,
  Targets,
  verifyOrders,
  withFaultInfra,
} from './lib.ts';
import { FaultProxy } from './proxy.ts';

const KEYS = 20;
const COPIES = 50;
const STOCK = 100;

/**
 * Library level: the connection breaks right after Redis executed the claim (SET NX), so ioredis
 * sends it again on reconnect and the second claim answers "taken". The request must still see the
 * claim as its own — run once and answer — not wait on itself and answer "in progress" (the key then
 * stuck for 24 h).
 */
async function claimReplyLost(result: ScenarioResult): Promise<void> {
  const server = await RedisServer.start();
  const proxy = await FaultProxy.start(server.port);
  const redis = new Redis(proxy.port, '127.0.0.1', { maxRetriesPerRequest: 1 });
  redis.on('error', () => {});
  try {
    await redis.ping();
    let runs = 0;
    const order: KeyedOrder<Answer> = {
      newAttempt: () => newAttempt(Date.now() + 5000),
      run: async () => {
        runs += 1;
        return { status: 202, body: { orderId: `o-${runs}` } };
      },
      resolve: async () => {
        throw new Error('the claim is ours: nothing to resolve');
      },
    };
    const cut = proxy.cut(100);
    const first: Answer = await idempotent(redis, 'buyer', 'lost-claim', fingerprint({ a: 1 }), order).catch(
      (err: Error) => ({ status: 0, body: { error: err.message } }),
    );
    await cut;
    const replay = await idempotent(redis, 'buyer', 'lost-claim', fingerprint({ a: 1 }), order);
    result.details.claimReplyLost = { first, replay, runs };
    check(
      result,
      first.status === 202 && runs === 1 && replay.body.orderId === first.body.orderId,
      `6b: a claim whose reply was lost: first ${JSON.stringify(first)}, replay ${JSON.stringify(replay)}, runs ${runs}`,
    );
  } finally {
    redis.disconnect();
    await proxy.close();
    await server.stop();
  }
}

export async function duplicates(): Promise<ScenarioResult> {
  const result = emptyResult('6', 'same Idempotency-Key ×50 concurrently');
  return withFaultInfra(result, {}, async (infra, procs) => {
    await procs.spawn(infra, 'worker');
    const apis = await Promise.all([procs.spawn(infra, 'api'), procs.spawn(infra, 'api')]);
    const targets = new Targets(apis.map((a) => a.url));
    const productId = randomId('s6');
    await putSale(targets, productId, { stock: STOCK, shards: 4 });

    const logs: OrderLog[] = Array.from({ length: KEYS }, (_, i) => ({
      i,
      userId: `u${i}`,
      quantity: 1,
      key: `${productId}-dup-${i}`,
      attempts: [],
    }));
    // Admission control may shed some copies (429 busy): like real clients they come back with the
    // same key, and only each copy's final answer must name the key's one order.
    const finals = new Map<OrderLog, Outcome[]>(logs.map((l) => [l, []]));
    await Promise.all(
      logs.flatMap((l) =>
        Array.from({ length: COPIES }, async () => {
          const outcomes = await submitShedRetried(targets, productId, l);
          l.attempts.push(...outcomes);
          finals.get(l)?.push(outcomes[outcomes.length - 1] as Outcome);
        }),
      ),
    );
    const idsOf = (attempts: Outcome[]) =>
      new Set(
        attempts.flatMap((a) => (a.kind === 'answer' && a.status === 202 ? [String(a.body.orderId)] : [])),
      );
    let split = 0;
    const seen: Record<string, number> = {};
    for (const l of logs) {
      const last = finals.get(l) ?? [];
      const ids = idsOf(last);
      const non202 = last.filter((a) => a.kind !== 'answer' || a.status !== 202);
      for (const a of non202) {
        const what = a.kind === 'answer' ? `${a.status} ${String(a.body.error)}` : a.error;
        seen[what] = (seen[what] ?? 0) + 1;
      }
      if (ids.size !== 1 || non202.length > 0) split += 1;
    }
    check(
      result,
      split === 0,
      `${split} keys got final answers other than one and the same 202 from their 50 copies: ${JSON.stringify(seen)}`,
    );

    // Restart both API processes (kill -9), then replay every key: the remembered answer.
    for (const [slot, api] of apis.entries()) {
      await api.kill();
      targets.down(slot);
      const again = await procs.spawn(infra, 'api');
      apis[slot] = again;
      targets.up(slot, again.url);
    }
    let changed = 0;
    for (const l of logs) {
      const before = idsOf(l.attempts);
      const replay = await submitOrder(targets, productId, l);
      l.attempts.push(replay);
      if (replay.kind !== 'answer' || replay.status !== 202 || !before.has(String(replay.body.orderId)))
        changed += 1;
    }
    check(result, changed === 0, `${changed} keys answered differently after the API restart`);

    // The same key with another body: refused, nothing created.
    const other = logs[0] as OrderLog;
    const reused = await submitOrder(targets, productId, { ...other, quantity: 2 });
    check(
      result,
      reused.kind === 'answer' && reused.status === 422,
      `the same key with another body was not refused with 422: ${JSON.stringify(reused)}`,
    );

    result.faults = `${KEYS} keys × ${COPIES} concurrent copies over 2 API processes, replayed after kill -9 of both`;
    await verifyOrders(result, infra, targets, logs, { productId, total: STOCK, oneOrderPerUser: true });
    result.sent = KEYS * COPIES + KEYS + 1;
    check(result, result.rows === KEYS, `${result.rows} rows for ${KEYS} keys`);
    await claimReplyLost(result);
    result.faults += '; a claim whose reply was lost (connection cut)';
  });
}
