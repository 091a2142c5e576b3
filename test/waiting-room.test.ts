// The waiting room: tickets that cannot be forged or moved, admission in the order of first requests
// across processes, abandoned tickets that do not stall the line, and every waiting ticket told of the
// sell-out. Lines are driven by hand (tick() with a set capacity), so no test depends on timing.
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { until } from '../harness/async.ts';
import { admin, BASE_SERVICE_ENV, call, createSale, drained } from '../harness/service.ts';
import { type Arrival, InvalidTicketError, TicketSigner } from '../src/waiting-room/index.ts';
import { DRAIN_GRACE_MS } from '../src/waiting-room/line.ts';
import { drawRank } from '../src/waiting-room/lottery.ts';
import { TICKET_LIFETIME_MS } from '../src/waiting-room/ticket.ts';
import { crowd as crowdLine, LONG_LINE, standInRoom } from './support/crowd.ts';
import { diffSnapshots, snapshotRedis } from './support/redis-snapshot.ts';
import { useService } from './support/suite.ts';

const { infra, svc } = useService();
const SECRET = BASE_SERVICE_ENV.QUEUE_SECRET as string;
/** Lines are reported to on their own clock (every process, every tick): not what a request changed. */
const LINES_TICK = { exclude: (key: string) => key.startsWith('queue:{') };
/** A waiting room as an API process runs it, on the test's clock and capacity. */
const room = (now: { ms: number }, available = 100) => standInRoom(infra.client, now, available);

describe('waiting-room tickets', () => {
  const signer = new TicketSigner(SECRET);
  const good = signer.issue('shoe', 'alice', 1_000_000);

  it('a ticket proves its product, buyer and first-seen time', () => {
    const t = signer.verify(good, 'shoe', 'alice', 1_000_500);
    assert.deepEqual([t.productId, t.userId, t.firstSeen], ['shoe', 'alice', 1_000_000]);
  });

  it('a forged, moved, expired or malformed ticket is refused', () => {
    const [v, p, u, seen, sig] = good.split('.') as [string, string, string, string, string];
    const earlier = [v, p, u, (1).toString(36), sig].join('.');
    const cases: Array<[string, string, string, number]> = [
      ['forged signature', `${good.slice(0, -2)}AA`, 'alice', 1_000_500],
      ['earlier first-seen', earlier, 'alice', 1_000_500],
      ['another product', good.replace('.shoe.', '.boot.'), 'alice', 1_000_500],
      ['another buyer', good, 'bob', 1_000_500],
      ['expired', good, 'alice', 1_000_001 + TICKET_LIFETIME_MS],
      ['malformed', 'not-a-ticket', 'alice', 1_000_500],
      ['another key', new TicketSigner(`${SECRET}x`).issue('shoe', 'alice', 1_000_000), 'alice', 1_000_500],
      ['too long', `${good}${'a'.repeat(500)}`, 'alice', 1_000_500],
    ];
    for (const [what, header, user, now] of cases) {
      assert.throws(() => signer.verify(header, 'shoe', user, now), InvalidTicketError, what);
    }
    assert.ok(seen);
  });

  it('the signature is HMAC-SHA256 under the secret, whatever its length (as node’s Hmac computes it)', () => {
    // Tickets signed before this signer (node's Hmac) stay valid, and any HMAC library can check one.
    for (const secret of [SECRET, 's'.repeat(64), 'long-'.repeat(30), 'é'.repeat(40)]) {
      const header = new TicketSigner(secret).issue('shoe', 'alice', 1_000_000);
      const body = header.slice(0, header.lastIndexOf('.'));
      const expected = createHmac('sha256', secret).update(body).digest('base64url').slice(0, 22);
      assert.equal(header.slice(body.length + 1), expected, `a secret of ${secret.length} characters`);
    }
  });
});

describe('waiting-room line', () => {
  it('admits in the order of first requests across two processes', async () => {
    const now = { ms: 50_000_000 };
    const a = room(now);
    const b = room(now);
    const product = 'wr-fifo';
    const [lineA, lineB] = [await a.room.line(product), await b.room.line(product)];
    const seen: Arrival[] = [];
    // 40 buyers, alternating processes, 7 ms apart: each joins the line at its process.
    for (let i = 0; i < 40; i++) {
      now.ms += 7;
      const at = i % 2 === 0 ? a : b;
      const arrival = at.room.arrival({ productId: product, userId: `u${i}` }, undefined);
      at.room.queue(arrival, i % 2 === 0 ? lineA : lineB);
      seen.push(arrival);
    }
    await a.room.tick();
    await b.room.tick();
    assert.equal(lineA.admits(seen[0] as Arrival), false);
    // Process A finished 10 orders: the line moves on by 10, and both processes see the same point.
    a.capacity.completed += 10;
    await a.room.tick();
    await b.room.tick();
    for (const line of [lineA, lineB]) {
      const admitted = seen.filter((t) => line.admits(t)).length;
      assert.ok(admitted >= 9 && admitted <= 11, `about 10 admitted, got ${admitted}`);
      // Whoever is admitted came before everyone who is not.
      const firstWaiting = seen.findIndex((t) => !line.admits(t));
      assert.ok(seen.slice(firstWaiting).every((t) => !line.admits(t)));
    }
    const standing = lineB.standing(seen[30] as Arrival);
    assert.ok(standing.position >= 18 && standing.position <= 22, `position ${standing.position}`);
    a.room.stop();
    b.room.stop();
  });

  it('buyers let in as the line empties come before a newcomer, who queues behind them', async () => {
    const now = { ms: 55_000_000 };
    const a = room(now);
    const product = 'wr-drain';
    const line = await a.room.line(product);
    const early = Array.from({ length: 5 }, (_, i) => {
      now.ms += 3;
      const arrival = a.room.arrival({ productId: product, userId: `early${i}` }, undefined);
      a.room.queue(arrival, line);
      return arrival;
    });
    await a.room.tick();
    // Enough capacity for all five: every one is let in, and nobody is left waiting.
    a.capacity.completed += 10;
    await a.room.tick();
    assert.ok(early.every((t) => a.room.lets(line, t)));
    assert.equal(line.waiting, 0);
    // A newcomer while they are on their way back is queued, not let in ahead of them.
    now.ms += 100;
    const late = a.room.arrival({ productId: product, userId: 'late' }, undefined);
    assert.equal(a.room.lets(line, late), false);
    assert.equal(a.room.queue(late, line).place.position, 0);
    // Once they had time to come back, a line with nobody waiting lets a newcomer straight in.
    now.ms += DRAIN_GRACE_MS;
    a.capacity.completed += 10;
    await a.room.tick();
    const later = a.room.arrival({ productId: product, userId: 'later' }, undefined);
    assert.ok(a.room.lets(line, late), 'the newcomer got its turn');
    assert.ok(a.room.lets(line, later));
    a.room.stop();
  });

  it('an ETA follows the pace the process has shown when the line has not moved yet', async () => {
    const now = { ms: 65_000_000 };
    const a = room(now);
    const product = 'wr-pace';
    const line = await a.room.line(product);
    // The process completes 50 orders every 100 ms for 3 s (other products'): about 500 a second.
    for (let i = 0; i < 30; i++) {
      now.ms += 100;
      a.capacity.completed += 50;
      await a.room.tick();
    }
    // Then 200 buyers queue here; the line has let nobody in, so its own pace is still 0.
    const places = Array.from({ length: 200 }, (_, i) => {
      now.ms += 3;
      const arrival = a.room.arrival({ productId: product, userId: `p${i}` }, undefined);
      return a.room.queue(arrival, line).place;
    });
    const last = places[199];
    assert.ok(last && last.position > 150, `position ${last?.position}`);
    // The smoothed pace after 3 s of 500/s is 479/s (1 - 0.9^30 of it).
    const expected = (last.position * 1000) / 479;
    assert.ok(Math.abs(last.etaMs - expected) < 5, `ETA ${last.etaMs} ms, expected about ${expected}`);
    for (let i = 2; i < places.length; i++) {
      assert.ok((places[i]?.etaMs ?? 0) >= (places[i - 1]?.etaMs ?? 0), 'later buyers, later ETAs');
    }
    a.room.stop();
  });

  it('abandoned tickets do not stall the line: idle capacity moves it on', async () => {
    const now = { ms: 60_000_000 };
    const a = room(now);
    const product = 'wr-abandon';
    const line = await a.room.line(product);
    const seen: Arrival[] = [];
    for (let i = 0; i < 30; i++) {
      now.ms += 3;
      const arrival = a.room.arrival({ productId: product, userId: `u${i}` }, undefined);
      a.room.queue(arrival, line);
      seen.push(arrival);
    }
    // Nobody admitted ever comes back (no order completes), but slots stand idle.
    a.capacity.limit = 20;
    await until('the line to pass every abandoned ticket', async () => {
      await a.room.tick();
      return line.admits(seen[29] as Arrival);
    });
    a.room.stop();
  });
});

describe('waiting-room lottery', () => {
  it('serves a window in the order drawn from the seed published after it, nobody before it closes', async () => {
    const now = { ms: 70_000_000 };
    const a = room(now);
    const b = room(now);
    const product = 'wr-lottery';
    const before = await a.room.configureLottery(product, 10, now.ms);
    assert.ok(
      before?.seedSha256 && before.seed === undefined,
      'the seed stays secret until the window closes',
    );
    const [lineA, lineB] = [await a.room.line(product), await b.room.line(product)];
    const buyers: Arrival[] = [];
    for (let i = 0; i < 30; i++) {
      now.ms += 100;
      const at = i % 2 === 0 ? a : b;
      const arrival = at.room.arrival({ productId: product, userId: `l${i}` }, undefined);
      const answer = at.room.queue(arrival, i % 2 === 0 ? lineA : lineB);
      assert.ok(answer.place.retryAfterMs >= 70_010_000 - now.ms, 'come back after the draw');
      buyers.push(arrival);
    }
    a.capacity.completed += 100;
    await a.room.tick();
    await b.room.tick();
    assert.equal(buyers.filter((x) => lineA.lets(x, now.ms)).length, 0, 'nobody is let in during the window');
    now.ms = 70_010_001;
    a.capacity.completed += 10;
    await a.room.tick();
    await b.room.tick();
    const published = (await a.room.view(product))?.lottery;
    const seed = String(published?.seed);
    assert.equal(createHash('sha256').update(seed).digest('hex'), before.seedSha256);
    // Anyone can re-compute the draw: the buyers let in are the first by SHA-256(seed:userId).
    const drawn = [...buyers].sort((x, y) => drawRank(seed, x.userId) - drawRank(seed, y.userId));
    const admitted = drawn.filter((x) => lineB.lets(x, now.ms)).length;
    assert.ok(admitted >= 9 && admitted <= 11, `about 10 admitted, got ${admitted}`);
    assert.ok(drawn.slice(0, admitted).every((x) => lineB.lets(x, now.ms)));
    assert.ok(drawn.slice(admitted).every((x) => !lineB.lets(x, now.ms)));
    a.room.stop();
    b.room.stop();
  });
});

describe('waiting room over HTTP', () => {
  /** Another API process whose line holds `buyers`: the service's own line turns active from it. */
  const crowd = (productId: string, buyers: number) => crowdLine(infra.client, svc.url, productId, buyers);

  const order = (productId: string, userId: string, headers: Record<string, string> = {}) =>
    call(svc.url, 'POST', '/api/orders', { productId, userId }, headers);

  async function queued(productId: string, userId: string) {
    return until(`a queued answer for ${userId}`, async () => {
      const r = await order(productId, userId);
      assert.ok(r.status === 202 || r.status === 429, JSON.stringify(r.body));
      return r.body.error === 'queued' ? r : undefined;
    });
  }

  it('a buyer behind a line is queued with a ticket, place and stock; bad tickets change nothing', async () => {
    await createSale(svc.url, 'wr-http', { stock: 10, shards: 2 });
    const other = await crowd('wr-http', LONG_LINE);
    const r = await queued('wr-http', 'late');
    assert.equal(r.headers.get('queue-ticket'), r.body.ticket);
    assert.ok(Number(r.headers.get('retry-after')) >= 1);
    assert.ok((r.body.position as number) >= 40, JSON.stringify(r.body));
    assert.match(String(r.body.message), /more buyers than it can serve right now: \d+ ahead of you/);
    assert.equal(r.body.available, 10);
    assert.ok((r.body.retryAfterMs as number) > 0);
    const ticket = String(r.body.ticket);
    const before = await snapshotRedis(infra.client, LINES_TICK);
    for (const [userId, header] of [
      ['late', `${ticket.slice(0, -3)}abc`],
      ['someone-else', ticket],
      ['late', 'garbage'],
    ] as const) {
      const bad = await order('wr-http', userId, { 'queue-ticket': header });
      assert.deepEqual([bad.status, bad.body.error], [400, 'invalid_ticket']);
    }
    assert.deepEqual(diffSnapshots(before, await snapshotRedis(infra.client, LINES_TICK)), []);
    const metrics = await (await fetch(`${svc.url}/metrics`)).text();
    assert.ok(Number(/^flashsale_waiting_room_invalid_tickets_total (\S+)$/m.exec(metrics)?.[1]) >= 3);
    assert.ok(Number(/^flashsale_waiting_room_buyers (\S+)$/m.exec(metrics)?.[1]) >= LONG_LINE / 2);
    const live = await call(svc.url, 'GET', '/admin/products/wr-http/live', undefined, admin);
    const line = live.body.waitingRoom as { waiting: number; servingLagMs: number };
    assert.ok(line.waiting >= LONG_LINE / 2 && line.servingLagMs >= 0, JSON.stringify(line));
    const product = await call(svc.url, 'GET', '/api/products/wr-http');
    assert.ok(
      (product.body.queue as { waiting: number }).waiting >= LONG_LINE / 2,
      JSON.stringify(product.body),
    );
    other.room.stop();
  });

  it('once the line reaches a ticket it places one order, and the ticket answers that order again', async () => {
    // One unit: once this buyer has it the sale is sold out, and the ticket must still answer it.
    await createSale(svc.url, 'wr-served', { stock: 1, shards: 1 });
    const other = await crowd('wr-served', LONG_LINE);
    const r = await queued('wr-served', 'patient');
    const ticket = { 'queue-ticket': String(r.body.ticket) };
    // The other process finishes enough orders to pass the whole line, this buyer included.
    other.capacity.completed += 2 * LONG_LINE;
    await other.room.tick();
    const first = await until('the line to reach the ticket', async () => {
      const again = await order('wr-served', 'patient', ticket);
      assert.ok([202, 429].includes(again.status), JSON.stringify(again.body));
      return again.status === 202 ? again : undefined;
    });
    const replay = await order('wr-served', 'patient', ticket);
    assert.deepEqual([replay.status, replay.body.orderId], [202, first.body.orderId]);
    let lateTicket: Record<string, string> = {};
    // A newcomer right after the line emptied is queued behind the buyers just let in (until this
    // process's next report shows the stock gone); following the protocol, it is told sold out.
    const late = await until('the late-comer to be told sold out', async () => {
      const answer = await order('wr-served', 'late-comer', lateTicket);
      if (answer.status === 429) lateTicket = { 'queue-ticket': String(answer.body.ticket) };
      return answer.status === 409 ? answer : undefined;
    });
    assert.equal(late.body.error, 'sold_out');
    // Sold out now, in this process's memory too: the ticket still answers its order.
    const after = await order('wr-served', 'patient', ticket);
    assert.deepEqual([after.status, after.body.orderId], [202, first.body.orderId]);
    assert.equal((await drained(svc.url, 'wr-served')).sold, 1);
    other.room.stop();
  });

  it('a lottery window: its seed is committed before, every buyer in it waits for the draw', async () => {
    const bad = await call(
      svc.url,
      'PUT',
      '/admin/products/wr-draw',
      { stock: 5, shards: 1, queue: { lotterySeconds: -1 } },
      admin,
    );
    assert.deepEqual([bad.status, bad.body.error], [400, 'invalid_request']);
    const put = await call(
      svc.url,
      'PUT',
      '/admin/products/wr-draw',
      { stock: 5, shards: 1, queue: { lotterySeconds: 600 } },
      admin,
    );
    assert.equal(put.status, 201, JSON.stringify(put.body));
    const committed = (put.body.queue as { lottery: { seedSha256: string; seed?: string } }).lottery;
    assert.match(committed.seedSha256, /^[0-9a-f]{64}$/);
    assert.equal(committed.seed, undefined);
    const r = await order('wr-draw', 'early-bird');
    assert.deepEqual([r.status, r.body.error], [429, 'queued'], JSON.stringify(r.body));
    assert.ok((r.body.retryAfterMs as number) > 500_000, 'come back once the window has closed');
    // A lone early buyer is told why it waits: the window, not a crowd that is not there.
    assert.equal(r.body.position, 0);
    assert.match(String(r.body.message), /lottery window for \d+ s more/);
    assert.doesNotMatch(String(r.body.message), /more buyers than it can serve/);
    const product = await call(svc.url, 'GET', '/api/products/wr-draw');
    const shown = (product.body.queue as { lottery: { seedSha256: string; seed?: string } }).lottery;
    assert.deepEqual([shown.seedSha256, shown.seed], [committed.seedSha256, undefined]);
    // A sale put again without a lottery has none: its buyers are served at once.
    await call(svc.url, 'PUT', '/admin/products/wr-draw', { stock: 5, shards: 1 }, admin);
    await until('the lottery to be gone', async () => (await order('wr-draw', 'early-bird')).status === 202);
  });

  it('the dashboard shows the line as the product page does; a sold-out product keeps nobody waiting', async () => {
    await createSale(svc.url, 'wr-dash', { stock: 2, shards: 1 });
    const other = await crowd('wr-dash', LONG_LINE);
    const lines = async () => {
      const [live, page, status] = await Promise.all([
        call(svc.url, 'GET', '/admin/products/wr-dash/live', undefined, admin),
        call(svc.url, 'GET', '/api/products/wr-dash'),
        call(svc.url, 'GET', '/admin/products/wr-dash', undefined, admin),
      ]);
      const waiting = (v: unknown) => (v as { waiting?: number } | null | undefined)?.waiting ?? 0;
      return {
        dashboard: waiting(live.body.waitingRoom),
        page: waiting(page.body.queue),
        admin: waiting(status.body.queue),
      };
    };
    const before = await lines();
    for (const [where, n] of Object.entries(before)) assert.ok(n >= LONG_LINE / 2, `${where}: ${n} waiting`);
    const r = await call(svc.url, 'POST', '/admin/products/wr-dash/restock', { delta: -2 }, admin);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    await until('the service to learn of the sell-out', async () => {
      const late = await order('wr-dash', 'late');
      return late.body.error === 'sold_out';
    });
    // Its line rests unreported from now on: no figure may stay frozen at the crowd (or grow a lag).
    let last = {};
    await until(
      'no waiting figure for the sold-out product',
      async () => {
        const now = await lines();
        last = now;
        return now.dashboard === 0 && now.page === 0 && now.admin === 0;
      },
      { describe: () => JSON.stringify(last) },
    );
    other.room.stop();
  });

  it('sold out while buyers wait: every waiting ticket gets 409 sold_out', async () => {
    await createSale(svc.url, 'wr-gone', { stock: 3, shards: 1 });
    const other = await crowd('wr-gone', LONG_LINE);
    const tickets: Array<[string, string]> = [];
    for (const user of ['w1', 'w2', 'w3'])
      tickets.push([user, String((await queued('wr-gone', user)).body.ticket)]);
    const r = await call(svc.url, 'POST', '/admin/products/wr-gone/restock', { delta: -3 }, admin);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    for (const [user, ticket] of tickets) {
      await until(`${user} to learn of the sell-out`, async () => {
        const again = await order('wr-gone', user, { 'queue-ticket': ticket });
        assert.ok([409, 429].includes(again.status), JSON.stringify(again.body));
        return again.body.error === 'sold_out';
      });
    }
    other.room.stop();
  });
});
