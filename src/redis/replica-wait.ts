// Group commit for Redis WAIT: confirms that replicas hold a master's writes with one marker write and one
// WAIT per master at a time, on a connection of its own, shared by every caller that asked before it went.
import { clientOf, duplicateClient, masterOf, type RedisClient } from './connection.ts';
import { ReplicaHealth } from './replica-health.ts';

/** The marker keys expire by themselves: nothing to clean up after a shard is retired. */
const MARKER_TTL_MS = 10_000;

interface Round {
  marker: string;
  done: Promise<boolean>;
  resolve(ok: boolean): void;
}

/** Per master: whether a round is in flight, and the one gathering callers meanwhile. */
interface MasterRounds {
  sending: boolean;
  next?: Round;
}

/**
 * Waits for replicas to hold writes, cheaply under load.
 *
 * WAIT blocks the connection it is sent on until the replicas answer, so on the connection that carries
 * the orders it would stall every command behind it; and it waits for that connection's own last write.
 * Here each master gets rounds on a dedicated connection: a marker write (SET with a short expiry, on a
 * key of that master's slot given by the caller), then WAIT. A master's replication stream is ordered,
 * so replicas that acknowledge the marker hold every write the master made before it, which covers every
 * write whose reply the caller had before asking. One round is in flight per master; callers arriving
 * meanwhile share the next one, so the rounds per second stay bounded by the replication round trip,
 * not by the orders.
 *
 * @example
 * const replicas = new ReplicaWait(redis, 1, 500);
 * await redis.set('stock:{p:1:0}', 10);
 * if (!(await replicas.confirm('stock:{p:1:0}:replicated'))) throw new Error('not replicated in time');
 */
export class ReplicaWait {
  private readonly redis: RedisClient;
  private readonly masters = new Map<string, MasterRounds>();
  /** Which masters are short of replicas: fed by every round's result and a periodic probe. */
  readonly health: ReplicaHealth;

  /**
   * @param redis the client whose writes are confirmed (a connection of its own is made from it)
   * @param replicas replicas that must acknowledge (WAIT numreplicas), at least 1
   * @param timeoutMs longest WAIT (WAIT timeout)
   * @param onHealthChange called with the masters short of replicas whenever that set changes
   */
  constructor(
    redis: RedisClient,
    private readonly replicas: number,
    private readonly timeoutMs: number,
    onHealthChange?: (short: string[]) => void,
  ) {
    this.redis = duplicateClient(redis, { maxRetriesPerRequest: 1 });
    this.redis.on('error', () => {});
    this.health = new ReplicaHealth(this.redis, replicas, { onChange: onHealthChange });
  }

  /**
   * False when the master of `key` is short of replicas now (ReplicaHealth): a write there could not
   * be confirmed, so it should not be made. Reads the client's slot map only, no round trip.
   */
  canConfirm(key: string): boolean {
    return !this.health.isShort(masterOf(this.redis, key));
  }

  /**
   * True once `replicas` replicas hold every write the master of `marker` made before this call; false
   * when they did not within the timeout, or the master could not be asked. `marker` is a key of the
   * written keys' slot (the master that made the writes); it is overwritten with a short expiry.
   */
  confirm(marker: string): Promise<boolean> {
    const address = masterOf(this.redis, marker);
    let rounds = this.masters.get(address);
    if (!rounds) {
      rounds = { sending: false };
      this.masters.set(address, rounds);
    }
    if (rounds.next) return rounds.next.done;
    let resolve: (ok: boolean) => void = () => {};
    const done = new Promise<boolean>((r) => {
      resolve = r;
    });
    rounds.next = { marker, done, resolve };
    if (!rounds.sending) this.send(rounds);
    return done;
  }

  close(): void {
    this.health.close();
    this.redis.disconnect();
  }

  private send(rounds: MasterRounds): void {
    const round = rounds.next;
    if (!round) return;
    rounds.next = undefined;
    rounds.sending = true;
    const address = masterOf(this.redis, round.marker);
    void this.run(round.marker)
      .catch(() => false)
      .then((ok) => {
        this.health.observeWait(address, ok);
        round.resolve(ok);
        rounds.sending = false;
        this.send(rounds);
      });
  }

  private async run(marker: string): Promise<boolean> {
    // The node connection itself: WAIT must follow the marker on the connection that wrote it.
    const replies = await clientOf(this.redis, marker)
      .pipeline()
      .set(marker, '1', 'PX', MARKER_TTL_MS)
      .wait(this.replicas, this.timeoutMs)
      .exec();
    const [[setErr], [waitErr, acked]] = replies as [[Error | null], [Error | null, number]];
    return !setErr && !waitErr && Number(acked) >= this.replicas;
  }
}
