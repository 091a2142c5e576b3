// Answers decided in one turn of the event loop, written together at its end (setImmediate): a peer on
// this host (a sidecar proxy, a load generator) is then woken once per burst, not once per answer.
import type { ServerResponse } from 'node:http';

interface Pending {
  res: ServerResponse;
  write: (res: ServerResponse) => void;
}

let pending: Pending[] = [];

/**
 * Runs `write(res)` at the end of this loop turn, after every request read in it has been decided.
 * Each answer written to loopback wakes its reader if it sleeps; written one by one between the
 * decisions, a process slower than its peer wakes it for every answer (measured on this 2-core VM:
 * the order door's refusals cost 20-32 µs of 92-137 µs more that way; docs/benchmarks.md). A write
 * that throws ends its own response only.
 *
 * @example
 * writeAtTurnEnd(res, (r) => send(r, answer));
 */
export function writeAtTurnEnd(res: ServerResponse, write: (res: ServerResponse) => void): void {
  if (pending.push({ res, write }) === 1) setImmediate(flush);
}

function flush(): void {
  const batch = pending;
  pending = [];
  for (const { res, write } of batch) {
    try {
      write(res);
    } catch (err) {
      res.destroy(err as Error);
    }
  }
}
