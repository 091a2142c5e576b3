// "Paid" comes from the payment provider (PAYMENT_WEBHOOK_SECRET): POST /api/orders/:id/pay carries
// X-Payment-Timestamp and X-Payment-Signature, an HMAC-SHA256 over "<timestamp>.<raw body>".
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import { InvalidSignatureError } from './auth-errors.ts';

/** How far the provider's timestamp may be from this server's clock, either way (replay window). */
export const REPLAY_WINDOW_SECONDS = 5 * 60;

const PAY_PATH = /^\/api\/orders\/[^/]+\/pay\/?(\?.*)?$/;
/** The raw bodies of pay calls, as received (the signature is over the bytes, not the parsed JSON). */
const rawBodies = new WeakMap<IncomingMessage, Buffer>();

/** express.json's `verify` hook: keeps the raw body of a pay call (at most the parser's 16 kB). */
export function keepRawBody(req: IncomingMessage, _res: unknown, buf: Buffer): void {
  if (PAY_PATH.test(req.url ?? '')) rawBodies.set(req, buf);
}

/** The signature header's value for `body` sent at `timestamp` (unix seconds); what the provider computes. */
export function paymentSignature(secret: string, timestamp: string, body: Buffer | string): string {
  const mac = createHmac('sha256', secret).update(`${timestamp}.`).update(body);
  return `sha256=${mac.digest('hex')}`;
}

/**
 * Middleware of the pay route: passes a call whose signature verifies over its timestamp and raw body,
 * with the timestamp within REPLAY_WINDOW_SECONDS of now; anything else is InvalidSignatureError (401),
 * before the order is looked at. A replay inside the window pays the same order again, which answers
 * the same (paying is idempotent).
 */
export function requirePaymentSignature(secret: string, nowMs: () => number = Date.now): RequestHandler {
  return (req, _res, next) => {
    const timestamp = req.get('x-payment-timestamp') ?? '';
    const signature = req.get('x-payment-signature') ?? '';
    if (!/^\d{1,12}$/.test(timestamp)) return next(new InvalidSignatureError('X-Payment-Timestamp missing'));
    if (Math.abs(nowMs() / 1000 - Number(timestamp)) > REPLAY_WINDOW_SECONDS) {
      return next(new InvalidSignatureError('X-Payment-Timestamp outside the replay window'));
    }
    if (!/^sha256=[0-9a-f]{64}$/i.test(signature)) {
      return next(new InvalidSignatureError('X-Payment-Signature missing or not sha256=<hex>'));
    }
    const expected = paymentSignature(secret, timestamp, rawBodies.get(req) ?? Buffer.alloc(0));
    const same = timingSafeEqual(
      Buffer.from(expected, 'latin1'),
      Buffer.from(signature.toLowerCase(), 'latin1'),
    );
    next(same ? undefined : new InvalidSignatureError('signature does not match'));
  };
}
