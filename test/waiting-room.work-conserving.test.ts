// The waiting room's door is work-conserving: a slot free beyond the buyers let in and on their way
// back goes to the buyer at the door, while buyers who come back keep their place ahead of it. Lines
// are driven by hand (tick() with a set capacity, the room's clock set by the test): no timing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OrderGate } from '../src/http/order-gate.ts';
import { QueuedError, type WaitingRoom } from '../src/waiting-room/index.ts';
import { RETURN_WINDOW_MS } from '../src/waiting-room/returns.ts';
import { standInRoom } from './support/crowd.ts';
import { useInfra } from './support/suite.ts';

const { infra } = useInfra();

/** The room's door with `slots` orders at once and no waiting for a slot. */
function door(room: WaitingRoom, slots: number): OrderGate {
  return new OrderGate({
    admission: {
      initialLimit: slots,
      minLimit: slots,
      maxLimit: slots,
      targetMs: 600_000,
      queueMs: 0,
      overloadQueueMs: 0,
      maxQueue: 0,
      maxLagMs: 0,
      maxUtilization: 0,
    },
    isSoldOut: () => false,
    room,
  });
}

/** A product's line on a stand-in process: 30 buyers queued, then 10 of them let in. */
async function lineWithTenLetIn(productId: string, now: { ms: number }) {
  const stand = standInRoom(infra.client, now);
  const line = await stand.room.line(productId);
  const tickets = Array.from({ length: 30 }, (_, i) => {
    now.ms += 3;
    const arrival = stand.room.arrival({ productId, userId: `early${i}` }, undefined);
    return stand.room.queue(arrival, line).place.ticket;
  });
  await stand.room.tick();
  stand.capacity.completed += 10;
  await stand.room.tick();
  return { ...stand, line, tickets };
}

/** The gate's answer to one order: admitted (its Release), or the 429 queued it was refused with. */
async function knock(gate: OrderGate, productId: string, userId: string, ticket?: string) {
  try {
    return await gate.enter({ productId, userId, quantity: 1 }, () => undefined, ticket);
  } catch (err) {
    if (err instanceof QueuedError) return err;
    throw err;
  }
}

describe('waiting room, work-conserving', () => {
  it('abandoned tickets cost no capacity: once the buyers let in did not come back, a newcomer gets a free slot', async () => {
    const now = { ms: 70_000_000 };
    const product = 'wc-abandoned';
    const { room, line } = await lineWithTenLetIn(product, now);
    const gate = door(room, 4);
    // The ten let in are on their way back: the four free slots are theirs.
    assert.ok((await knock(gate, product, 'newcomer')) instanceof QueuedError);
    // None of them came back within their retry: they are given up on at the next report.
    now.ms += RETURN_WINDOW_MS;
    await room.tick();
    const arrival = room.arrival({ productId: product, userId: 'newcomer2' }, undefined);
    assert.equal(room.lets(line, arrival), false, 'twenty buyers still wait ahead of it');
    const entry = await knock(gate, product, 'newcomer2');
    assert.equal(typeof (entry as { release?: unknown }).release, 'function', 'admitted at once');
    assert.equal(gate.admission.running, 1);
    room.stop();
  });

  it('buyers let in who come back keep their place ahead of a later newcomer, who gets what is left', async () => {
    const now = { ms: 75_000_000 };
    const product = 'wc-returning';
    const { room, line, tickets } = await lineWithTenLetIn(product, now);
    const gate = door(room, 8);
    const queued = await knock(gate, product, 'late');
    assert.ok(queued instanceof QueuedError, 'ten let in are expected back for eight free slots');
    const late = queued.place.ticket;
    // Eight of them come back and take every slot; the newcomer, with its ticket, still waits.
    const first = await Promise.all(tickets.slice(0, 8).map((t, i) => knock(gate, product, `early${i}`, t)));
    assert.ok(
      first.every((e) => !(e instanceof QueuedError)),
      'every returning buyer admitted by its place',
    );
    assert.ok((await knock(gate, product, 'late', late)) instanceof QueuedError);
    for (const e of first) if (!(e instanceof QueuedError)) e.release();
    // The next report learns that the line's buyers come back.
    await room.tick();
    // Eight slots free, two buyers still on their way: the newcomer takes one of what is beyond them,
    // twenty buyers ahead of it or not, and the two find theirs when they come back.
    assert.equal(room.lets(line, room.arrival({ productId: product, userId: 'late' }, late)), false);
    assert.ok(!((await knock(gate, product, 'late', late)) instanceof QueuedError));
    for (const i of [8, 9]) {
      assert.ok(!((await knock(gate, product, `early${i}`, tickets[i])) instanceof QueuedError));
    }
    assert.equal(gate.admission.running, 3);
    room.stop();
  });
});
