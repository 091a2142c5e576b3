// Where a new generation's shards live. On a Redis Cluster each shard's hash tag is chosen so that a
// product's N shards land evenly on the masters; on a single Redis every shard keeps its plain name.
import calculateSlot from 'cluster-key-slot';
import { masterOf, masters, type RedisClient } from '../redis/connection.ts';
import { shardStockKey } from './keys.ts';

/** Salts tried per shard; with 3 masters the first few already hit each one (a third of slots each). */
const MAX_SALT = 100_000;

/**
 * The stock keys of `count` shards of a generation: shard i goes to master (start + i) mod M, in the
 * sorted list of masters of the current slot map, where `start` depends on the product so that
 * products of a few shards do not all begin on the same master. A shard whose plain tag `{P:g:i}`
 * already lands there keeps it; otherwise the first salt `s` whose tag `{P:g:i:s}` does is used.
 *
 * The map may change afterwards (failover, slot migration): the keys stay valid, ioredis follows
 * them, and the next change of the sale places its new generation on the map of that moment.
 */
export function placeShards(
  redis: RedisClient,
  productId: string,
  generation: number,
  count: number,
): string[] {
  const nodes = masters(redis);
  const start = calculateSlot(productId) % nodes.length;
  return Array.from({ length: count }, (_, index) => {
    const plain = shardStockKey(productId, generation, index);
    if (nodes.length <= 1) return plain;
    const target = nodes[(start + index) % nodes.length];
    if (masterOf(redis, plain) === target) return plain;
    for (let salt = 1; salt <= MAX_SALT; salt++) {
      const key = shardStockKey(productId, generation, index, salt);
      if (masterOf(redis, key) === target) return key;
    }
    // Only a master serving almost no slots is missed: the shard then stays where its plain tag is.
    return plain;
  });
}
