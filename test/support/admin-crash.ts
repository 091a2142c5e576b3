// Helpers of the admin crash-recovery tests: admin calls on the suite's service, an admin "process"
// that dies as kill -9 would leave it, sales with units sold, and the conservation check.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockClient } from '@flashsale/lock';
import { admin, call, createSale, drained, type Infra, type Service } from '../../harness/service.ts';
import { SaleAdmin } from '../../src/inventory/admin.ts';
import { shardKeys, shardStockKey } from '../../src/inventory/keys.ts';
import { INVENTORY_SCRIPTS, SWITCH } from '../../src/inventory/scripts.ts';
import { defineScripts } from '../../src/redis/lua.ts';

export type Body = Record<string, unknown>;

/** The helpers, bound to a suite's infrastructure and service (handles are fine: used lazily). */
export function crashKit(infra: Infra, svc: Service) {
  /** Lease of a dying admin's locks: how long its holds outlive it. */
  const DYING_LEASE_MS = 1000;

  const status = async (productId: string): Promise<Body> => {
    const r = await call(svc.url, 'GET', `/admin/products/${productId}`, undefined, admin);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body;
  };
  const reconcile = async (productId: string): Promise<Body> =>
    (await call(svc.url, 'GET', `/admin/products/${productId}/reconcile`, undefined, admin)).body;
  const order = (productId: string, userId: string) =>
    call(svc.url, 'POST', '/api/orders', { productId, userId });

  /** Runs `fn` with an admin in a process of its own: own connections, own lock client. */
  async function otherAdmin<T>(fn: (a: SaleAdmin) => Promise<T>): Promise<T> {
    const locks = new LockClient(infra.redis.client());
    try {
      return await fn(new SaleAdmin(infra.redis.client(), locks));
    } finally {
      await locks.close();
    }
  }

  /**
   * An admin that dies right before sending the round trip that switches (the pipeline holding
   * switch.lua): its connections drop, its watchdog stops, and its call rejects (with whatever its
   * dead connections answer first).
   */
  function dyingAdmin(): { admin: SaleAdmin; died: () => boolean } {
    let died = false;
    const redis = infra.redis.client();
    defineScripts(redis, INVENTORY_SCRIPTS);
    const lockRedis = infra.redis.client();
    const locks = new LockClient(lockRedis, { watchdogLeaseMs: DYING_LEASE_MS });
    const die = async () => {
      died = true;
      lockRedis.disconnect();
      redis.disconnect();
      await locks.close().catch(() => {});
    };
    const pipeline = redis.pipeline.bind(redis);
    Object.assign(redis, {
      pipeline: () => {
        const p = pipeline();
        const exec = p.exec.bind(p);
        // switch.lua is queued as its command (SWITCH.name) on the admin's pipeline.
        const commands = p as unknown as Record<string, (...args: unknown[]) => unknown>;
        const queueSwitch = (commands[SWITCH.name] as (...args: unknown[]) => unknown).bind(p);
        let switching = false;
        commands[SWITCH.name] = (...args: unknown[]) => {
          switching = true;
          return queueSwitch(...args);
        };
        return Object.assign(p, {
          exec: async () => {
            if (!switching) return exec();
            await die();
            throw new Error('admin process died before switching');
          },
        });
      },
    });
    return { admin: new SaleAdmin(redis, locks), died: () => died };
  }

  /** Runs `change` on a dying admin: it must die before switching, leaving the change pending. */
  async function dies(change: (a: SaleAdmin) => Promise<unknown>): Promise<void> {
    const dying = dyingAdmin();
    await assert.rejects(change(dying.admin));
    assert.ok(dying.died(), 'the admin died before switching');
  }

  /** Buys every unit left, 20 buyers at once, one unit per order; returns the accepted order ids. */
  async function buyAll(productId: string, tag: string): Promise<string[]> {
    const accepted: string[] = [];
    let n = 0;
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        for (;;) {
          const r = await order(productId, `${tag}${n++}`);
          if (r.status === 202) accepted.push(r.body.orderId as string);
          else if (r.body.error === 'sold_out') return;
          else {
            assert.equal(r.status, 429, JSON.stringify(r.body));
            await sleep(10); // a buyer's pause before retrying a busy order (pacing, not a wait)
          }
        }
      }),
    );
    return accepted;
  }

  async function placeOrders(productId: string, n: number, tag: string): Promise<void> {
    for (let i = 0; i < n; i++) assert.equal((await order(productId, `${tag}${i}`)).status, 202);
  }

  /** A new sale of which `sold` units are sold and persisted; resolves to its generation. */
  async function saleWithSold(productId: string, spec: { stock: number; shards: number }, sold: number) {
    const generation = await createSale(svc.url, productId, spec);
    await placeOrders(productId, sold, 'early');
    await drained(svc.url, productId);
    return generation;
  }

  /** Conservation (DESIGN.md §5.2) on the service's own books, and the reconcile agreeing. */
  async function assertConserved(productId: string): Promise<Body> {
    const s = await drained(svc.url, productId);
    assert.equal(Number(s.available) + Number(s.sold), s.total, JSON.stringify(s));
    assert.equal(s.sold, s.confirmed);
    assert.equal(await infra.rows(productId), s.confirmed, 'one row per unit sold');
    const rec = await reconcile(productId);
    assert.equal(rec.ok, true, JSON.stringify(rec));
    return s;
  }

  const markerOf = (productId: string, generation: number, index: number) =>
    infra.client.get(shardKeys(shardStockKey(productId, generation, index)).retired);

  return {
    DYING_LEASE_MS,
    status,
    reconcile,
    order,
    otherAdmin,
    dyingAdmin,
    dies,
    buyAll,
    placeOrders,
    saleWithSold,
    assertConserved,
    markerOf,
  };
}
