// Waiting-room metrics: buyers waiting, how far behind now the line serves, buyers let in per second
// and the ETA of the last in line (read on scrape from the room), refused tickets, and the streams held.

import { Counter, Gauge, type Registry } from 'prom-client';
import type { LineStats } from '../waiting-room/room.ts';
import type { OrderOutcome } from './orders.ts';

/** What the waiting-room gauges show: this process's view of every line in use, summed (waiting,
 * admitted/s) or at its worst (serving lag, ETA). */
export type WaitingRoomState = LineStats;

const GAUGES = [
  [
    'waiting',
    'flashsale_waiting_room_buyers',
    'Waiting room: buyers waiting over every line this process reports to (the same in every process)',
    1,
  ],
  [
    'servingLagMs',
    'flashsale_waiting_room_serving_lag_seconds',
    'Waiting room: how far behind now the slowest line serves',
    1000,
  ],
  [
    'admittedPerSecond',
    'flashsale_waiting_room_admitted_per_second',
    'Waiting room: buyers let in per second over every line (all processes)',
    1,
  ],
  [
    'etaMs',
    'flashsale_waiting_room_eta_seconds',
    'Waiting room: ETA of the last buyer in the longest line',
    1000,
  ],
] as const;

export function waitingRoomMetrics(registry: Registry) {
  let room: (() => WaitingRoomState) | undefined;
  let held: (() => number) | undefined;
  new Gauge({
    name: 'flashsale_streams_held',
    help: 'Waiting buyers held on their event streams in this process (Accept: text/event-stream)',
    registers: [registry],
    collect() {
      this.set(held?.() ?? 0);
    },
  });
  const streamResults = new Counter({
    name: 'flashsale_stream_results_total',
    help: "Results the service decided for held streams, by outcome (placed when the buyer's turn came, or sold out)",
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  for (const [field, name, help, scale] of GAUGES) {
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        if (room) this.set(room()[field] / scale);
      },
    });
  }
  return {
    ticketsRefused: new Counter({
      name: 'flashsale_waiting_room_invalid_tickets_total',
      help: 'Waiting room: orders refused 400 invalid_ticket (altered, expired, or for another product or buyer)',
      registers: [registry],
    }),
    /** The waiting room whose lines the flashsale_waiting_room_* gauges report. */
    watchWaitingRoom(state: () => WaitingRoomState): void {
      room = state;
    },
    streamEvents: new Counter({
      name: 'flashsale_stream_events_total',
      help: 'Events written to held streams, by kind (queued, result, keep-alive)',
      labelNames: ['event'] as const,
      registers: [registry],
    }),
    streamsRefused: new Counter({
      name: 'flashsale_streams_refused_total',
      help: 'Waiting buyers who asked for a stream and got 429 queued: the process held WAITING_ROOM_MAX_STREAMS',
      registers: [registry],
    }),
    /** Counts a held stream's result by the outcome its answer has. */
    observeStreamResult(outcome: OrderOutcome): void {
      streamResults.inc({ outcome });
    },
    /** The count of held streams the flashsale_streams_held gauge reports. */
    watchStreams(size: () => number): void {
      held = size;
    },
  };
}
