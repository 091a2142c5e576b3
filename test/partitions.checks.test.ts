// The partition suite's end-of-scenario checks (test/partitions/checks.ts) on made-up histories: they
// must catch a fencing token going backwards in a shard's commit order and a refusal that became a
// row, and pass the histories that are fine.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { OrderLog, Outcome } from './faults/lib.ts';
import { refusal, rowsBehindRefusals, tokensBackwards } from './partitions/checks.ts';
import type { Commit } from './partitions/commit-log.ts';

const commit = (shardKey: string, orderId: string, token: number, seq: number): Commit => ({
  node: 'n1:6379',
  time: seq,
  seq,
  shardKey,
  orderId,
  token,
});
const answer = (status: number, body: Record<string, unknown> = {}): Outcome => ({
  kind: 'answer',
  status,
  body,
  at: 0,
});
const order = (userId: string, attempts: Outcome[]): OrderLog => ({ userId, quantity: 1, i: 0, attempts });
const row = (id: string, userId: string) => ({ id, user_id: userId });

describe('partition checks', () => {
  it('finds a token below an earlier commit of the same shard, among persisted orders only', () => {
    const commits = [
      commit('stock:{p:1:0}', 'a', 5, 1),
      commit('stock:{p:1:1}', 'b', 2, 2),
      commit('stock:{p:1:0}', 'c', 5, 3),
      commit('stock:{p:1:0}', 'd', 4, 4),
      commit('stock:{p:1:0}', 'e', 3, 5),
    ];
    assert.deepEqual(
      tokensBackwards(commits, new Set(['a', 'b', 'c', 'd'])).map((x) => [x.orderId, x.after]),
      [['d', 'c']],
    );
    assert.deepEqual(tokensBackwards(commits, new Set(['a', 'b', 'c'])), []);
  });

  it('tells refusals from answers that leave the outcome open', () => {
    assert.equal(refusal(answer(409, { error: 'sold_out' })), true);
    assert.equal(refusal(answer(429, { error: 'busy' })), true);
    assert.equal(refusal(answer(503, { error: 'unavailable' })), true);
    assert.equal(refusal(answer(503, { error: 'outcome_unknown' })), false);
    assert.equal(refusal(answer(500, { error: 'internal' })), false);
    assert.equal(refusal({ kind: 'noAnswer', error: 'timeout', at: 0 }), false);
  });

  it('flags a row whose buyer was refused, and not one whose outcome was open or accepted', () => {
    const logs = [
      order('u1', [answer(202, { orderId: 'o1' })]),
      order('u2', [answer(503, { error: 'unavailable', orderId: 'o2' })]),
      order('u3', [{ kind: 'noAnswer', error: 'reset', at: 0 }]),
      order('u4', [answer(409, { error: 'sold_out' })]),
    ];
    const rows = [row('o1', 'u1'), row('o2', 'u2'), row('o3', 'u3'), row('o4', 'u4'), row('o5', 'u9')];
    assert.deepEqual(
      rowsBehindRefusals(rows, logs).map((r) => [r.orderId, r.named]),
      [
        ['o2', true],
        ['o4', false],
        ['o5', false],
      ],
    );
  });
});
