// The order door's wiring: the waiting buyers' stream holder and the server's listener that sends
// POST /api/orders through the door (src/http/order-door.ts) and everything else to express.
import type { createApp } from '../http/app.ts';
import type { BodyLimits } from '../http/body-limits.ts';
import type { ApiDoors } from '../http/doors.ts';
import { withOrderDoor } from '../http/order-door.ts';
import type { OrderGate } from '../http/order-gate.ts';
import type { OrderIntake } from '../http/order-intake.ts';
import { StreamHolder } from '../http/streams/stream-holder.ts';
import type { Catalog } from '../inventory/catalog.ts';
import type { WaitingRoom } from '../waiting-room/index.ts';
import type { Runtime } from './boot.ts';

/** What the order door decides with. */
export interface DoorParts {
  bodyLimits: BodyLimits;
  gate: OrderGate;
  intake: OrderIntake;
  doors: ApiDoors;
  streams: StreamHolder | undefined;
}

/** Waiting buyers' streams (WAITING_ROOM on and WAITING_ROOM_MAX_STREAMS > 0), their orders placed by the intake. */
export function streamHolder(
  rt: Runtime,
  room: WaitingRoom | undefined,
  { catalog, intake, gate }: { catalog: Catalog; intake: OrderIntake; gate: OrderGate },
) {
  const { config, metrics, logger } = rt;
  if (!room || config.waitingRoom.maxStreams === 0) return undefined;
  const holder = new StreamHolder({
    max: config.waitingRoom.maxStreams,
    room,
    soldOut: (productId) => catalog.isSoldOut(productId),
    place: (call) =>
      intake.answer(
        () => call,
        (err) => logger.error({ err }, 'unexpected error'),
      ),
    placing: () => gate.admission.limit,
    // A held buyer's result is its request's final answer: counted with every order answer too.
    onResult: (outcome, seconds) => {
      metrics.observeOrder(outcome, seconds);
      metrics.observeStreamResult(outcome);
    },
    onEvent: (event) => metrics.streamEvents.inc({ event }),
    onRefused: () => metrics.streamsRefused.inc(),
  });
  metrics.watchStreams(() => holder.size);
  return holder;
}

/** The server's listener: POST /api/orders through the order door, the rest to express. */
export function withDoor(
  rt: Runtime,
  app: ReturnType<typeof createApp>,
  { gate, intake, doors, streams, bodyLimits }: DoorParts,
) {
  return withOrderDoor(app, {
    bodyLimits,
    gate,
    intake,
    identity: doors.identity,
    trust: doors.trust,
    nobodyTrusted: rt.config.http.trustProxy === false,
    onAnswer: rt.metrics.observeOrder,
    logger: rt.logger,
    streams,
  });
}
