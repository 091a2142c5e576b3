// Puts the units of expired and cancelled orders back on sale (SaleAdmin.returnUnits: a new shard
// generation), at most one run per product at a time in this process; requests meanwhile share the next run.
import type { SaleAdmin } from '../inventory/admin.ts';

export class UnitReturns {
  /** Per product: the run in progress, and the one queued behind it (which takes every request made meanwhile). */
  private readonly runs = new Map<string, { current: Promise<number>; next?: Promise<number> }>();

  constructor(
    private readonly admin: Pick<SaleAdmin, 'returnUnits'>,
    private readonly onReturned?: (units: number) => void,
  ) {}

  /**
   * Resolves once a run that started after this call has put back what was waiting (the units it put
   * back; 0 when another run or process had already done it).
   */
  request(productId: string): Promise<number> {
    const runs = this.runs.get(productId);
    if (!runs) {
      const current = this.run(productId);
      this.runs.set(productId, { current });
      return current;
    }
    runs.next ??= runs.current
      .catch(() => 0)
      .then(() => {
        const entry = this.runs.get(productId);
        const current = this.run(productId);
        if (entry) this.runs.set(productId, { current });
        return current;
      });
    return runs.next;
  }

  private run(productId: string): Promise<number> {
    const done = this.admin.returnUnits(productId).then((units) => {
      if (units > 0) this.onReturned?.(units);
      return units;
    });
    void done
      .catch(() => 0)
      .then(() => {
        if (this.runs.get(productId)?.current === done && !this.runs.get(productId)?.next) {
          this.runs.delete(productId);
        }
      });
    return done;
  }
}
