// The load clients' reading of POST /api/orders answers (loadtest/contract.js, shared by k6 and the
// Node runner): a well-formed 429 queued is the contract's answer, a malformed one is not.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { classifyAnswer } from '../loadtest/contract.js';
import { QueuedError } from '../src/waiting-room/errors.ts';

/** The body the service answers for a queued buyer (errors.ts: code, message, details). */
function queuedBody(): Record<string, unknown> {
  const err = new QueuedError('shoe', {
    ticket: 't1.x',
    position: 3,
    etaMs: 120,
    retryAfterMs: 250,
    available: 7,
  });
  return { error: err.code, message: err.message, ...err.details };
}

describe('load clients classify answers by the contract', () => {
  it('a 429 queued with its place and Retry-After is queued', () => {
    assert.deepEqual(classifyAnswer(429, queuedBody(), '1', 'shoe', 'alice'), {
      outcome: 'queued',
      reason: '',
    });
  });

  it('a 429 queued without a ticket or a place, or without Retry-After, is unexpected', () => {
    const { ticket: _t, ...noTicket } = queuedBody();
    assert.equal(classifyAnswer(429, noTicket, '1', 'shoe', 'alice').reason, 'bad_queued');
    assert.equal(
      classifyAnswer(429, { ...queuedBody(), retryAfterMs: -1 }, '1', 'shoe', 'alice').reason,
      'bad_queued',
    );
    assert.equal(classifyAnswer(429, queuedBody(), undefined, 'shoe', 'alice').reason, 'bad_429');
  });

  it('busy and rate_limited stay what they were; an unknown 429 is unexpected', () => {
    assert.equal(classifyAnswer(429, { error: 'busy' }, '2', 'shoe', 'alice').outcome, 'busy');
    assert.equal(
      classifyAnswer(429, { error: 'rate_limited' }, '2', 'shoe', 'alice').outcome,
      'rate_limited',
    );
    assert.equal(classifyAnswer(429, { error: 'other' }, '2', 'shoe', 'alice').reason, 'bad_429');
  });
});
