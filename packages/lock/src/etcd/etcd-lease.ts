// The one etcd lease of a lock client, shared by all its keys: granted on first use and again after a
// loss, and dropped when it went a whole TTL unconfirmed or the server says it no longer has it.
import { performance } from 'node:perf_hooks';
import type { Etcd3, Lease } from 'etcd3';
import { withDeadline } from '../waiting.ts';

/**
 * A lease and how long it is known alive: `aliveFrom` is when the last confirmed keep-alive was sent,
 * so a hold on it is valid until aliveFrom + TTL by this process's clock. `onLost` hears of every
 * loss (etcd3's 'lost', or a drop): every hold on the lease is gone.
 */
export class EtcdLease {
  private lease: Lease | undefined;
  private aliveFrom = 0;

  constructor(
    private readonly etcd: Etcd3,
    private readonly ttlSeconds: number,
    private readonly onLost: (why: string) => void,
  ) {}

  /** The lease's id, granting a new one when there is none, the last was lost, or it lapsed. */
  async current(): Promise<{ id: string; aliveFrom: number }> {
    let lease = this.lease;
    // No keep-alive confirmed for a whole TTL: the server may have expired the lease though the
    // etcd client has not noticed yet (a server paused past the TTL). A key put on it now could
    // vanish under its new holder, so the lease is dropped (its holds were lost by the same clock).
    const lapsed = lease !== undefined && performance.now() - this.aliveFrom >= this.ttlSeconds * 1000;
    if (lease && lapsed) void lease.revoke().catch(() => {});
    if (!lease || lease.revoked() || lapsed) lease = this.grant();
    const id = await lease.grant();
    return { id, aliveFrom: this.aliveFrom };
  }

  /** When the last confirmed keep-alive was sent (performance.now()). */
  get confirmedFrom(): number {
    return this.aliveFrom;
  }

  /** A keep-alive sent at `sentAt` was answered: holds are valid a TTL from then. */
  confirmed(sentAt: number): void {
    this.aliveFrom = Math.max(this.aliveFrom, sentAt);
  }

  /** The live lease, for a keep-alive of its own; undefined when there is none. */
  live(): Lease | undefined {
    return this.lease && !this.lease.revoked() ? this.lease : undefined;
  }

  /** Forgets the lease the server no longer has (it expired while this client was cut off). */
  drop(): void {
    const lost = this.lease;
    if (!lost) return;
    this.lease = undefined;
    void lost.revoke().catch(() => {});
    this.onLost('etcd lease expired');
  }

  /** Revokes the lease on close (its keys go at once); unreachable, they go when its TTL runs out. */
  async close(): Promise<void> {
    try {
      if (this.lease) await withDeadline(this.lease.revoke(), 2000);
    } catch {
      // Unreachable: the keys go when the lease's TTL runs out.
    }
  }

  private grant(): Lease {
    const sentAt = performance.now();
    const granted = this.etcd.lease(this.ttlSeconds);
    this.lease = granted;
    // The lease is gone (revoked, expired, or keep-alive answered TTL 0): every hold on it is lost.
    granted.on('lost', () => {
      if (this.lease === granted) this.onLost('etcd lease lost');
    });
    granted.on('keepaliveFired', () => {
      (granted as Lease & { firedAt?: number }).firedAt = performance.now();
    });
    granted.on('keepaliveSucceeded', () => {
      const firedAt = (granted as Lease & { firedAt?: number }).firedAt;
      if (this.lease === granted && firedAt !== undefined) this.confirmed(firedAt);
    });
    granted.on('keepaliveFailed', () => {});
    this.aliveFrom = sentAt;
    return granted;
  }
}
