// What the writer's tombstone check costs: a batch inserted as before (insertOrders) against the same
// batch under the shard locks with the tombstone lookup (insertUnlessWithdrawn), interleaved, medians.
import { performance } from 'node:perf_hooks';
import { createTestDatabase } from '../harness/postgres.ts';
import { createDatabase } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { insertOrders, type OrderRecord } from '../src/db/orders-repo.ts';
import { insertUnlessWithdrawn } from '../src/db/withdrawn-repo.ts';
import { percentile } from './lib/stats.ts';

const ROUNDS = Number(process.env.ROUNDS ?? 41);
const SIZES = [64, 500];
const SHARDS = 12;

const batch = (tag: string, size: number): OrderRecord[] =>
  Array.from({ length: size }, (_, i) => ({
    orderId: `b.1.${i % SHARDS}.${tag}${String(i).padStart(24 - tag.length, '0')}`,
    productId: 'b',
    userId: `u${tag}${i}`,
    quantity: 1,
    shardKey: `stock:{b:1:${i % SHARDS}}`,
    generation: 1,
    shardIndex: i % SHARDS,
    token: i + 1,
    reservedAt: Date.now(),
  }));

const database = await createTestDatabase();
const db = createDatabase(database.url);
try {
  await migrateToLatest(db);
  for (const size of SIZES) {
    const plain: number[] = [];
    const checked: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate which goes first, so neither always meets a warmer cache.
      const order = round % 2 === 0 ? ['plain', 'checked'] : ['checked', 'plain'];
      for (const kind of order) {
        const records = batch(`${kind === 'plain' ? 'a' : 'c'}${round.toString(16)}x`, size);
        const started = performance.now();
        if (kind === 'plain') await db.transaction().execute((trx) => insertOrders(trx, records));
        else await db.transaction().execute((trx) => insertUnlessWithdrawn(trx, records));
        (kind === 'plain' ? plain : checked).push(performance.now() - started);
      }
    }
    const median = (xs: number[]) => percentile(Float64Array.from(xs).sort(), 50);
    console.log(
      JSON.stringify({
        batch: size,
        rounds: ROUNDS,
        insertOrdersMs: Number(median(plain).toFixed(2)),
        insertUnlessWithdrawnMs: Number(median(checked).toFixed(2)),
      }),
    );
  }
} finally {
  await db.destroy();
  await database.drop();
}
