// The operator CLI against a running service: each command's output and exit status (status's sold
// with paid units, sale put's window, payment and lottery options, the development token without
// ADMIN_TOKEN), server errors as one `error: <code>: <message>` line with exit 2, reconcile's exit 1
// on a difference, and the launchers (bin/flashsale.js, npx flashsale, tsx src/cli.ts).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, it } from 'node:test';
import { freePort } from '../harness/redis-server.ts';
import { ADMIN_TOKEN, drained, placeOrder } from '../harness/service.ts';
import { type CliIo, main } from '../src/cli.ts';
import { DEV_ADMIN_TOKEN } from '../src/config/load.ts';
import { pay } from './support/lifecycle.ts';
import { useService } from './support/suite.ts';

const { infra, svc } = useService();

interface Run {
  code: number;
  out: string;
  err: string;
}

/** Runs the CLI in this process (fast): what it prints and its exit status. */
async function cli(
  args: string[],
  env: Record<string, string | undefined> = {},
  send: typeof fetch = (...a) => fetch(...a),
): Promise<Run> {
  let out = '';
  let err = '';
  const io: CliIo = {
    out: (t) => {
      out += t;
    },
    err: (t) => {
      err += t;
    },
    env: { BASE_URL: svc.url, ADMIN_TOKEN, ...env },
    fetch: send,
  };
  const code = await main(args, io);
  return { code, out, err };
}

interface Sent {
  url: string;
  headers: Record<string, string>;
  body: unknown;
}

/** A stand-in service answering `answer` to every request, and the requests it was sent. */
function recorder(answer: Record<string, unknown> = {}): { fetch: typeof fetch; sent: Sent[] } {
  const sent: Sent[] = [];
  const stand: typeof fetch = async (input, init) => {
    const body = typeof init?.body === 'string' ? JSON.parse(init.body) : undefined;
    sent.push({ url: String(input), headers: init?.headers as Record<string, string>, body });
    return Response.json(answer, { status: 201 });
  };
  return { fetch: stand, sent };
}

/** Runs a real process (the launchers), from the repository root. */
function spawnCli(file: string, args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      { env: { ...process.env, BASE_URL: svc.url, ADMIN_TOKEN, ...env }, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ code, out: stdout, err: stderr });
      },
    );
  });
}

const errorLine = /^error: [a-z_0-9]+: [^\n]+\n$/;

describe('flashsale CLI', () => {
  it('sale put creates then replaces a sale', async () => {
    const c = await cli(['sale', 'put', 'cli-a', '--stock', '100', '--shards', '4', '--per-user-limit', '2']);
    assert.equal(c.code, 0, c.err);
    assert.equal(
      c.out,
      'created sale "cli-a": total 100, available 100, 4 shards, generation 1, per-user limit 2\n',
    );
    const r = await cli(['sale', 'put', 'cli-a', '--stock=120', '--shards=3']);
    assert.equal(r.code, 0, r.err);
    assert.match(
      r.out,
      /^replaced sale "cli-a": total 120, available 120, 3 shards, generation 2, per-user limit none\n$/,
    );
    const j = await cli(['sale', 'put', 'cli-json', '--stock', '7', '--shards', '1', '--json']);
    assert.equal(j.code, 0);
    assert.deepEqual(JSON.parse(j.out), {
      productId: 'cli-json',
      total: 7,
      available: 7,
      shards: 1,
      generation: 1,
      perUserLimit: null,
    });
  });

  it('restock (up, and down with a bare negative number), reshard, status', async () => {
    await cli(['sale', 'put', 'cli-b', '--stock', '50', '--shards', '2']);
    const up = await cli(['restock', 'cli-b', '25']);
    assert.equal(up.code, 0, up.err);
    assert.equal(up.out, 'restocked "cli-b" by +25: total 75, available 75, generation 2\n');
    const down = await cli(['restock', 'cli-b', '-5']);
    assert.equal(down.code, 0, down.err);
    assert.equal(down.out, 'restocked "cli-b" by -5: total 70, available 70, generation 3\n');
    const dashdash = await cli(['restock', 'cli-b', '--', '-10']);
    assert.equal(dashdash.code, 0, dashdash.err);
    assert.match(dashdash.out, /by -10: total 60, available 60/);

    const rs = await cli(['reshard', 'cli-b', '7']);
    assert.equal(rs.code, 0, rs.err);
    assert.match(rs.out, /^resharded "cli-b" to 7 shards: generation 5, available 60 \(\d+ ms\)\n$/);
    const rj = await cli(['reshard', 'cli-b', '3', '--json']);
    assert.deepEqual(JSON.parse(rj.out), { productId: 'cli-b', shards: 3, generation: 6, available: 60 });

    const st = await cli(['status', 'cli-b']);
    assert.equal(st.code, 0, st.err);
    assert.match(st.out, /^product +cli-b$/m);
    assert.match(st.out, /^generation +6$/m);
    assert.match(st.out, /^total +60$/m);
    assert.match(st.out, /^available +60$/m);
    assert.match(st.out, /^returning +0$/m);
    assert.match(st.out, /^sold +0 \(reserved 0 \+ confirmed 0 \+ paid 0\)$/m);
    assert.match(st.out, /^shards +3$/m);
    assert.match(st.out, /^index +key +stock +sold$/m);
    for (const i of [0, 1, 2])
      assert.match(st.out, new RegExp(`^${i} +stock:\\{cli-b:6:${i}\\} +20 +0$`, 'm'));
    const sj = JSON.parse((await cli(['status', 'cli-b', '--json'])).out);
    assert.equal(sj.available, 60);
    assert.equal(sj.shards.length, 3);
  });

  it('status and reconcile count paid units in sold: reserved + confirmed + paid', async () => {
    const put = await cli([
      'sale',
      'put',
      'cli-paid',
      '--stock',
      '10',
      '--shards',
      '2',
      '--payment-timeout',
      '3600',
    ]);
    assert.equal(put.code, 0, put.err);
    const orders: string[] = [];
    for (const userId of ['p', 'q', 'r']) {
      const r = await placeOrder(svc.url, { productId: 'cli-paid', userId });
      assert.equal(r.status, 202, JSON.stringify(r.body));
      orders.push(r.body.orderId as string);
    }
    await drained(svc.url, 'cli-paid');
    for (const [i, userId] of ['p', 'q'].entries()) {
      assert.equal((await pay(svc.url, orders[i] as string, userId)).status, 200);
    }
    const st = await cli(['status', 'cli-paid']);
    assert.equal(st.code, 0, st.err);
    assert.match(st.out, /^total +10$/m);
    assert.match(st.out, /^available +7$/m);
    assert.match(st.out, /^returning +0$/m);
    assert.match(st.out, /^sold +3 \(reserved 0 \+ confirmed 1 \+ paid 2\)$/m);
    const ok = await cli(['reconcile', 'cli-paid']);
    assert.equal(ok.code, 0, ok.err);
    assert.equal(
      ok.out,
      'ok "cli-paid": available 7 + returning 0 + sold 3 == total 10; sold 3 == reserved 0 + confirmed 1 + paid 2\n',
    );
  });

  it('sale put sets the sale window, the payment timeout and the lottery window', async () => {
    const window = ['--starts-at', '2030-01-01T00:00:00Z', '--ends-at', '2030-01-02T00:00:00Z'];
    const put = await cli([
      'sale',
      'put',
      'cli-win',
      '--stock',
      '4',
      '--shards',
      '1',
      ...window,
      '--payment-timeout',
      '600',
    ]);
    assert.equal(put.code, 0, put.err);
    assert.equal(
      put.out,
      'created sale "cli-win": total 4, available 4, 1 shards, generation 1, per-user limit none, ' +
        'starts 2030-01-01T00:00:00.000Z, ends 2030-01-02T00:00:00.000Z, payment within 600 s\n',
    );
    const order = await placeOrder(svc.url, { productId: 'cli-win', userId: 'early' });
    assert.deepEqual([order.status, order.body.error], [409, 'not_started']);
    const product = (await fetch(`${svc.url}/api/products/cli-win`).then((r) => r.json())) as Record<
      string,
      unknown
    >;
    assert.equal(product.paymentTimeoutSec, 600);

    // The queue's lottery goes into the PUT body as DESIGN.md §4's queue: {lotterySeconds}, and the
    // confirmation says the window the service set (as its answer has it: queue.lottery).
    const lotPut = ['sale', 'put', 'cli-lot', '--stock', '4', '--shards', '1', '--lottery-seconds', '30'];
    const stand = recorder({ productId: 'cli-lot', total: 4 });
    await cli(lotPut, {}, stand.fetch);
    assert.deepEqual(stand.sent[0]?.body, { stock: 4, shards: 1, queue: { lotterySeconds: 30 } });
    const lot = await cli([...lotPut, '--per-user-limit', '2', ...window]);
    assert.equal(lot.code, 0, lot.err);
    assert.match(
      lot.out,
      /per-user limit 2, starts 2030-01-01T00:00:00\.000Z, ends 2030-01-02T00:00:00\.000Z, lottery 30 s \(drawn at 2030-01-01T00:00:30\.000Z, seed SHA-256 [0-9a-f]{12}…\)\n$/,
    );
    // A lottery the service did not set (its waiting room off) is said so, not left out.
    const off = await cli(lotPut, {}, recorder({ productId: 'cli-lot', total: 4, shards: 1 }).fetch);
    assert.match(off.out, /, no lottery \(the service's waiting room is off\)\n$/);

    const cases: Array<[string[], RegExp]> = [
      [['--payment-timeout', 'soon'], /^error: invalid_request: --payment-timeout must be an integer/],
      [['--lottery-seconds', '1.5'], /^error: invalid_request: --lottery-seconds must be an integer/],
      [
        ['--starts-at', 'tomorrow'],
        /^error: invalid_request: --starts-at must be an ISO 8601 time with a zone/,
      ],
      [
        ['--starts-at', '2026-12-01T10:00:00'],
        /^error: invalid_request: --starts-at "2026-12-01T10:00:00" has no time zone: add Z for UTC or an offset, e.g. 2026-12-01T10:00:00Z/,
      ],
      [
        ['--ends-at', '2026-12-01'],
        /^error: invalid_request: --ends-at "2026-12-01" has no time of day nor zone/,
      ],
      // Refused by the service: told with the flags' names, not the JSON fields'.
      [
        ['--starts-at', '2030-01-02T00:00:00Z', '--ends-at', '2030-01-01T00:00:00Z'],
        /^error: invalid_request: --ends-at: must be after --starts-at\n$/,
      ],
      [['--lottery-seconds', '999999'], /^error: invalid_request: --lottery-seconds: /],
    ];
    for (const [options, pattern] of cases) {
      const r = await cli(['sale', 'put', 'cli-win', '--stock', '4', '--shards', '1', ...options]);
      assert.equal(r.code, 2, `${options.join(' ')}: ${r.out}${r.err}`);
      assert.match(r.err, errorLine, r.err);
      assert.match(r.err, pattern);
    }
    const stray = await cli(['status', 'cli-win', '--ends-at', '2030-01-01T00:00:00Z']);
    assert.match(stray.err, /^error: usage: --ends-at does not apply to "status"/);
  });

  it('without ADMIN_TOKEN, the development token (and a hint when the service refuses it)', async () => {
    const stand = recorder({ productId: 'cli-dev', ok: true });
    const r = await cli(['reconcile', 'cli-dev'], { ADMIN_TOKEN: undefined }, stand.fetch);
    assert.equal(r.code, 0, r.err);
    assert.equal(stand.sent[0]?.headers.authorization, `Bearer ${DEV_ADMIN_TOKEN}`);
    const set = recorder({ ok: true });
    await cli(['reconcile', 'cli-dev'], { ADMIN_TOKEN: 'a-real-token-0123456789' }, set.fetch);
    assert.equal(set.sent[0]?.headers.authorization, 'Bearer a-real-token-0123456789');
    // This service runs with its own token: it refuses the development one, and the CLI says why.
    const refused = await cli(['status', 'cli-d'], { ADMIN_TOKEN: undefined });
    assert.equal(refused.code, 2);
    assert.match(refused.err, errorLine, refused.err);
    assert.match(
      refused.err,
      /^error: unauthorized: admin endpoints need .*ADMIN_TOKEN is not set, so the CLI sent the development token/,
    );
  });

  it('reconcile: exit 0 when the books balance, 1 with each difference listed', async () => {
    await cli(['sale', 'put', 'cli-c', '--stock', '30', '--shards', '3']);
    for (const u of ['x', 'y']) {
      await fetch(`${svc.url}/api/orders`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ productId: 'cli-c', userId: u }),
      });
    }
    await drained(svc.url, 'cli-c');
    const ok = await cli(['reconcile', 'cli-c']);
    assert.equal(ok.code, 0, ok.err);
    assert.equal(
      ok.out,
      'ok "cli-c": available 28 + returning 0 + sold 2 == total 30; sold 2 == reserved 0 + confirmed 2 + paid 0\n',
    );

    // Units appear from nowhere in one shard: available + returning + sold no longer equals total.
    const key = (await infra.client.lrange('sale:{cli-c}:shards', 0, 0))[0] as string;
    await infra.client.incrby(key, 5);
    const bad = await cli(['reconcile', 'cli-c']);
    assert.equal(bad.code, 1);
    assert.match(bad.out, /^DIFFERENCES in "cli-c" \(1\):\n/);
    assert.match(
      bad.out,
      /available \+ returning \+ sold == total: expected 30, found 35 \(\+5\): available 33 \+ returning 0 \+ sold 2 = 35, total 30/,
    );
    const bj = await cli(['reconcile', 'cli-c', '--json']);
    assert.equal(bj.code, 1);
    const body = JSON.parse(bj.out);
    assert.equal(body.ok, false);
    assert.equal(body.differences.length, 1);
    // A row lost from Postgres: sold no longer equals reserved + confirmed either.
    await infra.client.decrby(key, 5);
    await infra.pool.query(
      "delete from orders where id = (select id from orders where product_id = 'cli-c' limit 1)",
    );
    const lost = await cli(['reconcile', 'cli-c']);
    assert.equal(lost.code, 1);
    assert.match(lost.out, /sold == reserved \+ confirmed \+ paid: expected 2, found 1 \(-1\)/);
  });

  it('server errors: one line "error: <code>: <message>", exit 2', async () => {
    await cli(['sale', 'put', 'cli-d', '--stock', '5', '--shards', '1']);
    const cases: Array<[string[], RegExp, Record<string, string>?]> = [
      [['reshard', 'cli-d', '0'], /^error: invalid_request: shards: /],
      [['reshard', 'cli-d', '1025'], /^error: invalid_request: shards: /],
      [['reshard', 'ghost', '3'], /^error: unknown_product: no sale for product "ghost"/],
      [['status', 'ghost'], /^error: unknown_product: /],
      [['reconcile', 'ghost'], /^error: unknown_product: /],
      [
        ['restock', 'cli-d', '-6'],
        /^error: insufficient_stock: cannot remove 6 units from "cli-d": only 5 available/,
      ],
      [['sale', 'put', 'cli-d', '--stock', '5', '--shards', '2000'], /^error: invalid_request: --shards: /],
      [['status', 'cli-d'], /^error: unauthorized: admin endpoints need /, { ADMIN_TOKEN: 'not-the-token' }],
    ];
    for (const [args, pattern, env] of cases) {
      const r = await cli(args, env);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.out}${r.err}`);
      assert.match(r.err, errorLine, r.err);
      assert.match(r.err, pattern);
      assert.equal(r.out, '');
    }
    // Nothing changed.
    const st = JSON.parse((await cli(['status', 'cli-d', '--json'])).out);
    assert.equal(st.available, 5);
    assert.equal(st.shards.length, 1);
  });

  it('local errors: usage, bad numbers, unreachable service — exit 2, one line', async () => {
    const port = await freePort();
    const cases: Array<[string[], RegExp, Record<string, string | undefined>?]> = [
      [['frobnicate', 'x'], /^error: usage: unknown command "frobnicate"; see flashsale --help\n$/],
      [['stauts', 'cli-d'], /^error: usage: unknown command "stauts" \(did you mean status\?\)/],
      [['reshard', 'cli-d'], /^error: usage: reshard needs <productId> <shards>/],
      [['reshard', 'cli-d', '2.5'], /^error: invalid_request: shards must be an integer, got "2.5"/],
      [['reshard', 'cli-d', 'eight'], /^error: invalid_request: shards must be an integer/],
      [['restock', 'cli-d', '1', 'extra'], /^error: usage: unexpected argument "extra"/],
      [
        ['sale', 'put', 'cli-d', '--stock', '5'],
        /^error: usage: sale put needs --stock <n> and --shards <n>/,
      ],
      [['sale', 'delete', 'cli-d'], /^error: usage: expected "sale put/],
      [['status', 'cli-d', '--stock', '3'], /^error: usage: --stock does not apply to "status"/],
      [['status', 'cli-d', '--bogus'], /^error: usage: unknown option --bogus; see flashsale --help\n$/],
      [
        ['sale', 'put', 'cli-d', '--stock', '5', '--shards', '1', '--start-at', '2030-01-01T00:00:00Z'],
        /^error: usage: unknown option --start-at \(did you mean --starts-at\?\); see flashsale --help\n$/,
      ],
      [['status', 'cli-d', '--jsno'], /^error: usage: unknown option --jsno \(did you mean --json\?\)/],
      [['status', 'cli-d', '-x'], /^error: usage: unknown option -x; see/],
      [['status', 'cli-d', '--url'], /^error: usage: --url needs a value; see/],
      [['sale', 'put', 'cli-d', '--stock', '--shards', '1'], /^error: usage: --stock needs a value; see/],
      [['status', 'cli-d', '--json=yes'], /^error: usage: --json takes no value; see/],
      [['status', 'bad.id'], /^error: invalid_request: productId must match/],
      [
        ['status', 'cli-d'],
        /^error: usage: BASE_URL\/--url must be an http\(s\) URL/,
        { BASE_URL: 'ftp://x' },
      ],
      [
        ['status', 'cli-d'],
        /^error: unreachable: cannot reach http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/,
        { BASE_URL: `http://127.0.0.1:${port}` },
      ],
    ];
    for (const [args, pattern, env] of cases) {
      const r = await cli(args, env);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.out}${r.err}`);
      assert.match(r.err, errorLine, r.err);
      assert.match(r.err, pattern);
      // Never node's raw parseArgs text (with its unbalanced quote).
      assert.doesNotMatch(r.err, /To specify|Unknown option '|<value>/, r.err);
    }
    // --url wins over BASE_URL.
    const viaFlag = await cli(['status', 'cli-d', '--url', svc.url], {
      BASE_URL: `http://127.0.0.1:${port}`,
    });
    assert.equal(viaFlag.code, 0, viaFlag.err);
    // No command: the usage text on stderr, exit 2; --help: on stdout, exit 0.
    const none = await cli([]);
    assert.equal(none.code, 2);
    assert.match(none.err, /^flashsale — admin CLI/);
    const help = await cli(['--help']);
    assert.equal(help.code, 0);
    assert.match(help.out, /Usage:\n {2}flashsale sale put <productId> --stock <n> --shards <n>/);
  });

  it('changes are audited under the operator name', async () => {
    await cli(['sale', 'put', 'cli-e', '--stock', '5', '--shards', '1', '--actor', 'ops-carol']);
    await cli(['reshard', 'cli-e', '2']);
    const rows = await infra.pool.query(
      "select actor, action from admin_audit where product_id = 'cli-e' order by id",
    );
    // The authenticated actor (the token at an address), with the operator name as its label.
    assert.equal(rows.rows[0].actor, 'admin-token@127.0.0.1 label:ops-carol');
    assert.equal(rows.rows[0].action, 'put');
    assert.match(rows.rows[1].actor, /^admin-token@127\.0\.0\.1 label:cli:.+@.+/);
    assert.equal(rows.rows[1].action, 'reshard');
  });

  it('launchers: bin/flashsale.js, npx flashsale and tsx src/cli.ts run the same CLI', async () => {
    const bin = await spawnCli('bin/flashsale.js', [
      'sale',
      'put',
      'cli-f',
      '--stock',
      '12',
      '--shards',
      '2',
    ]);
    assert.equal(bin.code, 0, bin.err);
    assert.match(bin.out, /^created sale "cli-f": total 12/);
    const rec = await spawnCli(process.execPath, ['bin/flashsale.js', 'reconcile', 'cli-f']);
    assert.equal(rec.code, 0, rec.err);
    assert.match(rec.out, /^ok "cli-f"/);
    // Exit status 1 and 2 survive the launcher.
    await infra.client.incrby((await infra.client.lrange('sale:{cli-f}:shards', 0, 0))[0] as string, 1);
    assert.equal((await spawnCli('bin/flashsale.js', ['reconcile', 'cli-f'])).code, 1);
    const err = await spawnCli('bin/flashsale.js', ['reshard', 'cli-f', '0']);
    assert.equal(err.code, 2);
    assert.match(err.err, errorLine);
    // `npm run admin -- …` runs `tsx src/cli.ts …`.
    const tsx = await spawnCli(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'status', 'cli-f']);
    assert.equal(tsx.code, 0, tsx.err);
    assert.match(tsx.out, /^available +13$/m);
    // `npx flashsale` resolves this package's own bin (never the registry: --no-install).
    const npx = await spawnCli('npx', ['--no-install', 'flashsale', '--help']);
    assert.equal(npx.code, 0, npx.err);
    assert.match(npx.out, /^flashsale — admin CLI/);
  });
});
