// "Paid" comes from the payment provider (PAYMENT_WEBHOOK_SECRET): POST /api/orders/:id/pay carries
// X-Payment-Timestamp and X-Payment-Signature, an HMAC-SHA256 over "<timestamp>.<raw body>".
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import type { RedisClient } from '../redis/connection.ts';
import { InvalidSignatureError } from './auth-errors.ts';
import { HttpError } from './errors.ts';

/** How far the provider's timestamp may be from this server's clock, either way (replay window). */
export const REPLAY_WINDOW_SECONDS = 5 * 60;

/**
 * The raw body of every request read as JSON, as received (the signature is over the bytes, not the
 * parsed JSON). Kept for every path, not picked out by one: a path test here that routing did not
 * share once let `/API/ORDERS/<id>/PAY` be checked over an empty body. It is the parser's own buffer
 * (at most 16 kB), held no longer than the request.
 */
const rawBodies = new WeakMap<IncomingMessage, Buffer>();
/** The pay path as the service spells it (case-sensitive), the only one a webhook is taken on. */
const PAY_PATH = /^\/api\/orders\/[^/]+\/pay$/;

/** express.json's `verify` hook: keeps the raw body. */
export function keepRawBody(req: IncomingMessage, _res: unknown, buf: Buffer): void {
  rawBodies.set(req, buf);
}

/** The signature header's value for `body` sent at `timestamp` (unix seconds); what the provider computes. */
export function paymentSignature(secret: string, timestamp: string, body: Buffer | string): string {
  const mac = createHmac('sha256', secret).update(`${timestamp}.`).update(body);
  return `sha256=${mac.digest('hex')}`;
}

/**
 * `paysig:{<signature>}`: the order a signed pay call was used for, kept past the replay window. The
 * signature covers the timestamp and the body (`{userId}`), not the order, so without this record one
 * signed call could be replayed within the window to pay another order of the same buyer.
 */
const usedKey = (signature: string) => `paysig:{${signature.toLowerCase()}}`;

/**
 * Middleware of the pay route: passes a call whose signature verifies over its timestamp and raw body,
 * with the timestamp within REPLAY_WINDOW_SECONDS of now, and which was not used for another order;
 * anything else is InvalidSignatureError (401), before the order is looked at. The same call again,
 * for the same order, pays it again, which answers the same (paying is idempotent).
 */
export function requirePaymentSignature(
  secret: string,
  redis: RedisClient,
  nowMs: () => number = Date.now,
): RequestHandler {
  const verify = verifier(secret, nowMs);
  return async (req, _res, next) => {
    // The provider calls the route as written (the router ignores case); any other spelling is nobody's webhook.
    if (!PAY_PATH.test(req.originalUrl.split('?')[0] ?? ''))
      return next(new HttpError('non_canonical_path', 'the pay path must be /api/orders/<orderId>/pay'));
    const orderId = String(req.params.orderId);
    const refused = verify(req);
    if (refused) return next(refused);
    const key = usedKey(req.get('x-payment-signature') as string);
    try {
      const first = await redis.set(key, orderId, 'EX', 2 * REPLAY_WINDOW_SECONDS, 'NX');
      if (first === null && (await redis.get(key)) !== orderId) {
        return next(new InvalidSignatureError('this signed call was already used for another order'));
      }
      next();
    } catch (err) {
      next(err);
    }
  };
}

/** The signature check itself: undefined when the call verifies, else why not. */
function verifier(secret: string, nowMs: () => number) {
  return (req: Parameters<RequestHandler>[0]): InvalidSignatureError | undefined => {
    const timestamp = req.get('x-payment-timestamp') ?? '';
    const signature = req.get('x-payment-signature') ?? '';
    if (!/^\d{1,12}$/.test(timestamp)) return new InvalidSignatureError('X-Payment-Timestamp missing');
    if (Math.abs(nowMs() / 1000 - Number(timestamp)) > REPLAY_WINDOW_SECONDS) {
      return new InvalidSignatureError('X-Payment-Timestamp outside the replay window');
    }
    if (!/^sha256=[0-9a-f]{64}$/i.test(signature)) {
      return new InvalidSignatureError('X-Payment-Signature missing or not sha256=<hex>');
    }
    const expected = paymentSignature(secret, timestamp, rawBodies.get(req) ?? Buffer.alloc(0));
    const same = timingSafeEqual(
      Buffer.from(expected, 'latin1'),
      Buffer.from(signature.toLowerCase(), 'latin1'),
    );
    return same ? undefined : new InvalidSignatureError('signature does not match');
  };
}
