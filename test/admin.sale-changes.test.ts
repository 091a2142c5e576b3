// The admin use case (src/admin/sale-changes.ts) on every path: a change whose audit row cannot be
// written is not made (503, sale untouched, no row); lock errors of an admin change answer like the
// order path's (busy 429 with Retry-After, unavailable 503), never 500; and every lock code has a status.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  LockAcquireTimeoutError,
  LockLostError,
  LockNotHeldError,
  LockQuorumUnavailableError,
  LockUnavailableError,
} from '@flashsale/lock';
import { admin, call, createSale } from '../harness/service.ts';
import { SaleChanges } from '../src/admin/sale-changes.ts';
import { errorAnswer } from '../src/http/errors.ts';
import type { SaleAdmin } from '../src/inventory/admin.ts';
import { useService } from './support/suite.ts';

const { infra, svc } = useService();

const auditRows = async (productId: string) =>
  (await infra.pool.query('select * from admin_audit where product_id = $1 order by id', [productId])).rows;

describe('an audit row that cannot be written', () => {
  before(async () => {
    // Postgres refuses the audit rows of one actor (by its label): the write fails as an outage or a
    // bad row would.
    await infra.pool.query(`
      create function refuse_audit() returns trigger language plpgsql as $$
      begin
        if new.actor like '% label:unaudited' then raise exception 'audit refused'; end if;
        return new;
      end $$;
      create trigger refuse_audit before insert on admin_audit for each row execute function refuse_audit();`);
  });
  after(async () => {
    await infra.pool.query('drop trigger refuse_audit on admin_audit; drop function refuse_audit();');
  });

  it('fails the change: 503 unavailable, the sale untouched, no row', async () => {
    const P = 'unaudited-sale';
    await createSale(svc.url, P, { stock: 10, shards: 2 });
    const sale = await infra.client.hgetall(`sale:{${P}}`);
    const rows = (await auditRows(P)).length;
    const as = { ...admin, 'x-admin-actor': 'unaudited' };
    for (const [method, path, body] of [
      ['POST', `/admin/products/${P}/restock`, { delta: 5 }],
      ['POST', `/admin/products/${P}/reshard`, { shards: 3 }],
      ['PUT', `/admin/products/${P}`, { stock: 1, shards: 1, perUserLimit: 1 }],
      ['PUT', '/admin/products/never-created', { stock: 1, shards: 1 }],
    ] as const) {
      const r = await call(svc.url, method, path, body, as);
      assert.equal(r.status, 503, `${method} ${path}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error, 'unavailable');
      assert.match(String(r.body.message), /audit/);
    }
    assert.deepEqual(await infra.client.hgetall(`sale:{${P}}`), sale, 'the sale is unchanged');
    assert.equal(await infra.client.exists('sale:{never-created}'), 0, 'no sale was created');
    assert.equal((await auditRows(P)).length, rows);
  });
});

describe('lock errors of an admin change', () => {
  /** The use case over an admin whose changes fail with `err`. */
  const failingWith = (err: Error) => {
    const fails = async () => {
      throw err;
    };
    const stub = { put: fails, restock: fails, reshard: fails } as unknown as SaleAdmin;
    return new SaleChanges({ admin: stub, redis: svc.rt.redis, db: svc.rt.db, logger: svc.rt.logger });
  };
  const by = { actor: 'lock-test', request: { delta: 1 } };

  it('a shard or admin lock that stayed busy: 429 busy with Retry-After, and no audit row', async () => {
    const P = 'lock-busy';
    await createSale(svc.url, P, { stock: 4, shards: 2 });
    const rows = (await auditRows(P)).length;
    const changes = failingWith(new LockAcquireTimeoutError(`flashsale:admin:{${P}}`, 30_000));
    for (const change of [
      () => changes.restock(P, 1, by),
      () => changes.reshard(P, 3, by),
      () => changes.put(P, { stock: 1, shards: 1 }, by),
    ]) {
      const err = await change().then(
        () => assert.fail('the change should fail'),
        (e: unknown) => e,
      );
      const answer = errorAnswer(err);
      assert.deepEqual([answer.status, answer.body.error], [429, 'busy']);
      assert.equal(answer.headers['Retry-After'], '1');
    }
    assert.equal((await auditRows(P)).length, rows, 'a refused change leaves no row');
  });

  it('the lock service unreachable: 503 unavailable, never 500', async () => {
    const P = 'lock-down';
    await createSale(svc.url, P, { stock: 4, shards: 2 });
    for (const lockErr of [
      new LockUnavailableError('stock:{lock-down:1:0}:lock', new Error('ECONNREFUSED'), 'etcd'),
      new LockQuorumUnavailableError('stock:{lock-down:1:0}:lock', 1, 2, 3),
    ]) {
      const err = await failingWith(lockErr)
        .restock(P, 1, by)
        .then(
          () => assert.fail('the change should fail'),
          (e: unknown) => e,
        );
      const answer = errorAnswer(err);
      assert.deepEqual([answer.status, answer.body.error], [503, 'unavailable'], lockErr.message);
      assert.ok(answer.headers['Retry-After']);
    }
  });

  it('a lock error that reaches HTTP untranslated still has its status (the table covers every code)', () => {
    const cases: Array<[Error, number]> = [
      [new LockAcquireTimeoutError('l', 10), 429],
      [new LockUnavailableError('l', new Error('x')), 503],
      [new LockQuorumUnavailableError('l', 1, 2, 3), 503],
      [new LockLostError('l', 'lease lapsed'), 503],
      [new LockNotHeldError('l'), 503],
    ];
    for (const [err, status] of cases) assert.equal(errorAnswer(err).status, status, err.message);
  });
});
