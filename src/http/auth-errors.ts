// The errors of the doors in front of the API: buyer authentication, the payment provider's signature
// and the admin token's failed-attempt limit (issue 25); their statuses are in errors.ts.
import { FlashsaleError } from '../errors.ts';

/** No buyer identity, or one that does not verify (missing, forged, expired, wrong audience). 401. */
export class UnauthenticatedError extends FlashsaleError {
  constructor(reason: string) {
    super('unauthenticated', `buyer not authenticated: ${reason}`);
  }
}

/** The body names a userId other than the authenticated buyer. 403. */
export class BuyerMismatchError extends FlashsaleError {
  constructor() {
    super('buyer_mismatch', 'the body userId is not the authenticated buyer (leave it out)');
  }
}

/** A payment call without a valid X-Payment-Signature within the replay window. 401. */
export class InvalidSignatureError extends FlashsaleError {
  constructor(reason: string) {
    super('invalid_signature', `payment not signed by the provider: ${reason}`);
  }
}

/** Too many wrong admin tokens from this address: refused without looking at the token. 429. */
export class TooManyAttemptsError extends FlashsaleError {
  constructor(readonly retryAfterSeconds: number) {
    super('too_many_attempts', `too many failed admin attempts; retry after ${retryAfterSeconds} s`);
  }
}
