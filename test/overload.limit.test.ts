// The adaptive limit of admission control (src/http/admission.ts) on a clock and an event loop the
// test drives: excess demand on a saturated loop cuts it when refusals are as many as completions,
// and only holds it when they are few; the same loop without excess demand (the process is busy,
// not asked for more) does not cut; once demand falls the limit
// climbs back to its initial value; a floor under the latency target (a remote lock service's round
// trip) is not congestion; and a standing queue holds at most one limit's worth.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AdmissionControl, type AdmissionOptions, type Release } from '../src/http/admission.ts';

const OPTIONS: AdmissionOptions = {
  initialLimit: 20,
  minLimit: 2,
  maxLimit: 100,
  // Far above any step of the clock here: only the loop and the demand move the limit.
  targetMs: 60_000,
  queueMs: 1000,
  overloadQueueMs: 50,
  maxQueue: 1000,
  maxLagMs: 0,
  maxUtilization: 0.9,
};

/** An AdmissionControl on a manual clock and a loop whose utilization the test sets. */
function control(o: Partial<AdmissionOptions> = {}) {
  const world = { now: 0, utilization: 0 };
  const ac = new AdmissionControl(
    { ...OPTIONS, ...o },
    { lagMs: () => 0, utilization: () => world.utilization },
    () => world.now,
  );
  return { ac, world };
}

/** Takes every free slot (each admitted at once). */
function fill(ac: AdmissionControl): Release[] {
  const held: Release[] = [];
  while (ac.refusalOnArrival() === undefined && ac.state().inflight < ac.limit) {
    const r = ac.acquire();
    assert.equal(typeof r, 'function', 'a free slot admits at once');
    held.push(r as Release);
  }
  return held;
}

/**
 * One window of a loaded process: 250 ms on, `refusals` orders refused on arrival (the limit is full,
 * no queue), then `completions` fast completions, each slot taken again at once when the limit allows.
 */
function window(
  ac: AdmissionControl,
  world: { now: number },
  held: Release[],
  refusals: number,
  completions: number,
): void {
  world.now += 250;
  for (let i = 0; i < refusals; i++) assert.equal(ac.refusalOnArrival(), 'queue_full');
  for (let i = 0; i < completions; i++) {
    world.now += 1;
    (held.pop() as Release)();
    const again = ac.acquire();
    if (typeof again === 'function') held.push(again);
  }
}

describe('admission control', () => {
  it('under a herd, a saturated loop cuts the limit once per window and never grows it', () => {
    const { ac, world } = control({ queueMs: 0 });
    const held = fill(ac);
    assert.equal(held.length, 20);
    world.utilization = 0.95;
    const limits: number[] = [];
    for (let w = 0; w < 6; w++) {
      // More refusals than completions in each window (a herd several times what the process
      // serves), and several fast completions: at most one cut each window, no growth.
      window(ac, world, held, 4, 2);
      limits.push(ac.limit);
    }
    // The first window only starts the count: there is no earlier one to judge.
    assert.deepEqual(limits, [20, 16, 12, 10, 8, 6]);
    for (const r of held) r();
  });

  it("with onSaturation 'hold', a saturated loop cuts nothing, neither in a herd nor for slow orders", () => {
    const { ac, world } = control({ queueMs: 0, targetMs: 100, onSaturation: 'hold' });
    const held = fill(ac);
    world.utilization = 0.95;
    // A herd's windows, each completion slower than the target (every order waited in the loop).
    for (let w = 0; w < 6; w++) {
      world.now += 250;
      for (let i = 0; i < 4; i++) assert.equal(ac.refusalOnArrival(), 'queue_full');
      (held.pop() as Release)();
      held.push(ac.acquire() as Release);
    }
    assert.equal(ac.limit, 20);
    // The same slow order on a loop with room to spare is congestion after all: it cuts.
    world.utilization = 0.5;
    const slow = ac.acquire();
    world.now += 400;
    (held.pop() as Release)();
    assert.ok(ac.limit < 20, `cut to ${ac.limit}`);
    if (typeof slow === 'function') slow();
    for (const r of held) r();
  });

  it("orders slow by the lock service's round trip (floorMs) do not cut the limit; slower than target + floor they do", () => {
    // A lock service 300 ms away: every order pays that on top of its own work (issue 38).
    const { ac, world } = control({ targetMs: 100, floorMs: () => 300 });
    const order = (ms: number) => {
      const r = ac.acquire() as Release;
      world.now += ms;
      r();
    };
    for (let i = 0; i < 30; i++) order(350);
    assert.equal(ac.limit, 20, 'orders within target + floor are not congestion');
    order(800);
    assert.equal(ac.limit, 10, 'one past it cuts by (target + floor) / latency, at most halving');
  });

  it('a saturated loop with a few refusals does not cut the limit', () => {
    // A process starved by its neighbours reads saturated whatever it admits; refusing a few orders
    // is no reason to admit fewer (cutting on that spiralled the limit to its floor in CI).
    const { ac, world } = control({ queueMs: 0 });
    const held = fill(ac);
    world.utilization = 1;
    // Several completions for the one refusal of each window.
    for (let w = 0; w < 5; w++) window(ac, world, held, 1, 3);
    assert.equal(ac.limit, 20);
    assert.equal(held.length, 20, 'every slot was taken again: nothing was cut');
    for (const r of held) r();
  });

  it('a saturated loop without excess demand does not cut: the process is busy, not asked for more', () => {
    const { ac, world } = control();
    world.utilization = 1;
    for (let i = 0; i < 50; i++) {
      world.now += 10;
      const r = ac.acquire();
      assert.equal(typeof r, 'function');
      world.now += 5;
      (r as Release)();
    }
    assert.equal(ac.limit, 20);
  });

  it('climbs back to the initial limit once demand falls, and only then by whole steps', () => {
    const { ac, world } = control({ queueMs: 0 });
    let held = fill(ac);
    world.utilization = 0.95;
    for (let window = 0; window < 4; window++) {
      world.now += 250;
      held.push(...fill(ac));
      assert.equal(ac.refusalOnArrival(), 'queue_full');
      (held.pop() as Release)();
    }
    const cut = ac.limit;
    assert.ok(cut < 20, `cut to ${cut}`);
    for (const r of held) r();
    // Excess demand on an unsaturated loop: about one more per round of orders, not one per order.
    world.utilization = 0.5;
    held = fill(ac);
    assert.equal(ac.refusalOnArrival(), 'queue_full');
    for (const r of held) r();
    assert.equal(ac.limit, cut + 1);
    // A second later nothing has been refused: each fast order adds a whole one up to the initial limit.
    world.now += 1001;
    for (let i = 0; i < 20; i++) (ac.acquire() as Release)();
    assert.equal(ac.limit, 20);
  });

  it('a burst waits up to queueMs; once excess demand has stood that long, one limit of waiters at most', async () => {
    const { ac, world } = control();
    const held = fill(ac);
    const waiting = () => {
      const r = ac.acquire();
      assert.ok(r instanceof Promise, 'an order above the limit waits');
      return r;
    };
    const burst = Array.from({ length: 30 }, waiting);
    assert.equal(ac.state().queued, 30);
    world.now += 500;
    burst.push(waiting());
    world.now += 500;
    // Excess demand for queueMs: a standing queue, already longer than one limit: refused on arrival.
    assert.equal(ac.refusalOnArrival(), 'queue_full');
    for (const r of held) r();
    // The oldest 20 waiters got the freed slots.
    const admitted = await Promise.all(burst.slice(0, 20));
    assert.ok(admitted.every((r) => typeof r === 'function'));
    assert.equal(ac.state().queued, 11);
    for (const r of admitted) (r as Release)();
    for (const r of await Promise.all(burst.slice(20))) (r as Release)();
    assert.deepEqual(ac.state(), { limit: ac.limit, inflight: 0, queued: 0 });
  });
});
