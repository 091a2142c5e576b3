// What the k6 scripts (lib.js) and the Node runner (local/) must agree on: the duration notation
// of the variables and the HTTP contract of POST /api/orders (DESIGN.md §4). Plain JavaScript
// that imports no k6 module, so both load it; contract.d.ts types it for the TypeScript side.

/** @typedef {'accepted' | 'sold_out' | 'busy' | 'rate_limited' | 'unexpected'} Outcome */

/**
 * Seconds in a k6 duration string ("90s", "2m", "1h30m", "500ms").
 * @param {string} text
 * @param {string} [examples]  the forms the error message suggests
 * @returns {number}
 */
export function parseDuration(text, examples = '30s, 5m, 1h30m') {
  const re = /(\d+(?:\.\d+)?)(ms|h|m|s)/g;
  let seconds = 0;
  let consumed = 0;
  for (let match = re.exec(text); match !== null; match = re.exec(text)) {
    const amount = Number(match[1]);
    const unit = match[2];
    seconds +=
      unit === 'h' ? amount * 3600 : unit === 'm' ? amount * 60 : unit === 's' ? amount : amount / 1000;
    consumed += match[0].length;
  }
  if (consumed !== text.length || consumed === 0) {
    throw new Error(`not a duration: "${text}" (use e.g. ${examples})`);
  }
  return seconds;
}

/**
 * Sorts an answer of POST /api/orders into the contract's outcomes. A status the contract
 * allows but with a body it does not (a 202 without orderId, a 409 that is not sold_out)
 * counts as unexpected too: the contract is status *and* body.
 * @param {number} status        0: no answer (network error)
 * @param {Record<string, unknown> | null} body  the JSON object answered, null if none
 * @param {unknown} retryAfter   the Retry-After header, undefined when absent
 * @param {string} productId
 * @param {string | undefined} userId
 * @returns {{ outcome: Outcome, reason: string }}
 */
export function classifyAnswer(status, body, retryAfter, productId, userId) {
  if (status === 202) {
    const ok =
      body !== null &&
      typeof body.orderId === 'string' &&
      body.orderId !== '' &&
      body.status === 'reserved' &&
      body.productId === productId &&
      body.userId === userId &&
      body.quantity === 1;
    return ok ? { outcome: 'accepted', reason: '' } : { outcome: 'unexpected', reason: 'bad_202_body' };
  }
  if (status === 409) {
    if (body?.error === 'sold_out') return { outcome: 'sold_out', reason: '' };
    // Every buyer is a distinct user buying one unit, so limit_exceeded means the per-user
    // accounting leaked across users.
    return { outcome: 'unexpected', reason: `409_${String(body?.error ?? 'no_body')}` };
  }
  if (status === 429) {
    // busy: a shard lock stayed taken, or the API process is at its admission limit (overload);
    // rate_limited: this buyer or address is over its rate limit. Both must say when to retry.
    const code = body?.error;
    return (code === 'busy' || code === 'rate_limited') && retryAfter !== undefined && retryAfter !== ''
      ? { outcome: code, reason: '' }
      : { outcome: 'unexpected', reason: 'bad_429' };
  }
  return { outcome: 'unexpected', reason: status === 0 ? 'network_error' : `status_${status}` };
}
