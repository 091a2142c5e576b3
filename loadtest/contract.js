// What the k6 scripts (lib.js) and the Node runner (local/) must agree on: the duration notation
// of the variables and the HTTP contract of POST /api/orders (DESIGN.md §4). Plain JavaScript
// that imports no k6 module, so both load it; contract.d.ts types it for the TypeScript side.

/** @typedef {'accepted' | 'sold_out' | 'queued' | 'busy' | 'rate_limited' | 'unexpected'} Outcome */

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
    // queued: the waiting room holds the buyer's place (come back with the ticket after retryAfterMs);
    // busy: a shard lock stayed taken, or the API process is at its admission limit (overload);
    // rate_limited: this buyer or address is over its rate limit. Each must say when to retry.
    const code = body?.error;
    if (retryAfter === undefined || retryAfter === '') return { outcome: 'unexpected', reason: 'bad_429' };
    if (code === 'queued') {
      return isPlace(body)
        ? { outcome: 'queued', reason: '' }
        : { outcome: 'unexpected', reason: 'bad_queued' };
    }
    return code === 'busy' || code === 'rate_limited'
      ? { outcome: code, reason: '' }
      : { outcome: 'unexpected', reason: 'bad_429' };
  }
  return { outcome: 'unexpected', reason: status === 0 ? 'network_error' : `status_${status}` };
}

/**
 * A 429 queued body names the buyer's place: a ticket, the buyers ahead, an ETA, when to come back
 * and the units still on sale (DESIGN.md §4, the waiting room).
 * @param {Record<string, unknown> | null} body
 * @returns {body is { ticket: string, position: number, etaMs: number, retryAfterMs: number, available: number }}
 */
export function isPlace(body) {
  const count = (/** @type {unknown} */ v) => typeof v === 'number' && Number.isFinite(v) && v >= 0;
  return (
    body !== null &&
    typeof body.ticket === 'string' &&
    body.ticket !== '' &&
    count(body.position) &&
    count(body.etaMs) &&
    count(body.retryAfterMs) &&
    count(body.available)
  );
}
