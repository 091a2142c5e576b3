// The waiting room's door is work-conserving: a slot free beyond the buyers let in and on their way
// back goes to the buyer at the door, while buyers who come back keep their place ahead of it. Lines
// are driven by hand (tick() with a set capacity, the room's clock set by the test): no timing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OrderGate } from '../src/http/order-gate.ts';
import { QueuedError, type WaitingRoom } from '../src/waiting-room/index.ts';
import { LATE_MS, MAX_RETRY_MS } from '../src/waiting-room/returns.ts';
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
    now.ms += MAX_RETRY_MS + LATE_MS;
    await room.tick();
    const arrival = room.arrival({ productId: product, userId: 'newcomer2' }, undefined);
    assert.equal(room.lets(line, arrival), false, 'twenty buyers still wait ahead of it');
    const entry = await knock(gate, product, 'newcomer2');
    assert.equal(typeof (entry as { release?: unknown }).release, 'function', 'admitted at once');
    assert.equal(gate.admission.running, 1);
    room.stop();
  });

  it('buyers let in who come back keep their place ahead of later newcomers, who then get what is free', async () => {
    const now = { ms: 75_000_000 };
    const product = 'wc-returning';
    const { room, line, tickets } = await lineWithTenLetIn(product, now);
    const gate = door(room, 8);
    const queued = (userId: string, ticket?: string) =>
      knock(gate, product, userId, ticket).then((e) => e instanceof QueuedError);
    assert.ok(await queued('late1'), 'ten let in are expected back for eight free slots');
    // Eight of them come back and take every slot, by their place; a newcomer still waits.
    const first = await Promise.all(tickets.slice(0, 8).map((t, i) => knock(gate, product, `early${i}`, t)));
    for (const e of first) assert.ok(!(e instanceof QueuedError), 'a returning buyer admitted by its place');
    assert.ok(await queued('late2'));
    for (const e of first) if (!(e instanceof QueuedError)) e.release();
    await room.tick();
    // Eight slots free, but the line's buyers are coming back: the next newcomer waits too.
    assert.ok(await queued('late3'), 'the slots are held while let-in buyers return');
    for (const i of [8, 9]) assert.equal(await queued(`early${i}`, tickets[i]), false);
    // Once no buyer holding a ticket has asked for as long as any is sent away, nobody let in is on
    // the way: a newcomer takes a free slot, though twenty who never came back are still ahead of it.
    now.ms += MAX_RETRY_MS + LATE_MS;
    await room.tick();
    assert.equal(room.lets(line, room.arrival({ productId: product, userId: 'late4' }, undefined)), false);
    assert.equal(await queued('late4'), false);
    assert.equal(gate.admission.running, 3);
    room.stop();
  });
});
