// The hand-off to the writer: orders this process accepts within a few milliseconds travel in one
// BullMQ job, because a job costs Redis about 40 commands, more than the whole guarded reservation.
import type { HandOffSection } from '../config/sections.ts';
import { Batcher } from './batcher.ts';
import type { OrderRecord } from './order.ts';
import { enqueueOrders, type OrderQueue } from './queue.ts';

/** Settings of {@link HandOff}: config.handOff (HANDOFF_* in src/config/sections.ts, with their defaults). */
export type HandOffOptions = HandOffSection;

/**
 * Sends accepted orders to the writer in batch jobs. The reservation written with the decrement is
 * the outbox, so a batch that never reaches the queue (the process died, Redis failed) loses
 * nothing: the sweeper enqueues its orders one by one once they are older than SWEEP_AGE_MS.
 * With several queues (one per master of a cluster) the batches go round-robin over them, so each
 * master carries its share of the hand-off.
 *
 * @example
 * const handOff = new HandOff(queue, { maxBatch: 64, maxWaitMs: 2 });
 * await handOff.send(record); // resolves once the job holding it is in the queue
 */
export class HandOff {
  private readonly batcher: Batcher<OrderRecord>;

  constructor(queues: OrderQueue | readonly OrderQueue[], o: HandOffOptions) {
    const list = Array.isArray(queues) ? queues : [queues as OrderQueue];
    // A random start per process, so processes do not all begin on the same master.
    let next = Math.floor(Math.random() * list.length);
    this.batcher = new Batcher<OrderRecord>({
      maxSize: o.maxBatch,
      maxWaitMs: o.maxWaitMs,
      flush: async (records) => {
        const queue = list[next++ % list.length] as OrderQueue;
        await enqueueOrders(queue, records);
        return undefined;
      },
    });
  }

  /** Resolves once the job holding `record` is queued; rejects if that add failed. */
  send(record: OrderRecord): Promise<void> {
    return this.batcher.add(record);
  }

  /** Sends what is waiting and resolves once every started add has settled. */
  close(): Promise<void> {
    return this.batcher.drain();
  }
}
