// Who the buyer is (BUYER_AUTH, DESIGN.md §4 "Buyer identity"): the `sub` of a verified JWT, the
// X-Buyer-Id of a trusted proxy, or (none) the body's userId; and who may read an order.
import type { IncomingMessage } from 'node:http';
import type { Request, RequestHandler } from 'express';
import type { BuyerAuth } from '../config/security.ts';
import { bearerToken } from './admin-auth.ts';
import type { AdminBrake } from './admin-brake.ts';
import { BuyerMismatchError, UnauthenticatedError } from './auth-errors.ts';
import type { BuyerTokens } from './buyer-tokens.ts';
import { userId as userIdSchema } from './validation.ts';

/** Who reads an order: the admin (full view), a verified buyer (their own only), or anyone (BUYER_AUTH=none). */
export type Viewer = { kind: 'admin' } | { kind: 'buyer'; buyer: string } | { kind: 'anyone' };

export interface BuyerIdentityOptions {
  mode: BuyerAuth;
  /** The verifier of buyer JWTs (mode jwt). */
  tokens?: BuyerTokens | undefined;
  /** The admin token's check and brake (admin-brake.ts), for the admin view of an order. */
  admin: AdminBrake;
  /** True for a TRUST_PROXY peer (trust.ts): only such a peer's X-Buyer-Id is believed. */
  trusts: (address: string) => boolean;
}

/**
 * The buyer of a request. In `jwt` and `header` mode the buyer is authenticated, and becomes the
 * body's userId (a body naming someone else is refused), so everything after it — validation, the
 * per-user rate limit and limit, ownership checks — counts the authenticated buyer.
 */
export class BuyerIdentity {
  constructor(private readonly o: BuyerIdentityOptions) {}

  get mode(): BuyerAuth {
    return this.o.mode;
  }

  /** The authenticated buyer, or undefined in mode `none`; throws UnauthenticatedError. */
  async buyer(req: IncomingMessage): Promise<string | undefined> {
    if (this.o.mode === 'none') return undefined;
    if (this.o.mode === 'header') return checked(this.trustedBuyerHeader(req));
    const token = bearerToken(req);
    if (!token || !this.o.tokens) throw new UnauthenticatedError('Authorization: Bearer <JWT> missing');
    return checked(await this.o.tokens.subject(token));
  }

  /**
   * Middleware of a buyer's call with a body (order, cancel; pay when no provider signs it): binds
   * the body's userId to the authenticated buyer. 401 unauthenticated, 403 buyer_mismatch.
   */
  readonly asBuyer: RequestHandler = (req, _res, next) => {
    // Nobody to authenticate: on at once, not through three promise hops.
    if (this.o.mode === 'none') {
      next();
      return;
    }
    this.bind(req).then(() => next(), next);
  };

  /** Binds the body's userId to the authenticated buyer (mode none: nothing to do). */
  async bind(req: IncomingMessage & { body?: unknown }): Promise<void> {
    if (this.o.mode === 'none') return;
    const buyer = await this.buyer(req);
    if (buyer !== undefined) req.body = boundBody(req.body, buyer);
  }

  /**
   * Who reads: the admin token first, then the buyer (mode none: anyone). A bearer token that is
   * neither the admin token nor (mode jwt) the buyer's counts as a wrong admin token, and is answered
   * as no token would be (so the answer says nothing of the guess) until its address is braked: 429.
   */
  async viewer(req: Request): Promise<Viewer> {
    const token = bearerToken(req);
    if (this.o.admin.isAdmin(token)) return { kind: 'admin' };
    try {
      const buyer = await this.buyer(req);
      if (token !== undefined && this.o.mode !== 'jwt') this.o.admin.refused(req.ip, true);
      return buyer === undefined ? { kind: 'anyone' } : { kind: 'buyer', buyer };
    } catch (err) {
      if (token !== undefined && err instanceof UnauthenticatedError) this.o.admin.refused(req.ip, true);
      throw err;
    }
  }

  /** X-Buyer-Id, believed only from a TRUST_PROXY peer (the socket's address, not X-Forwarded-For). */
  private trustedBuyerHeader(req: IncomingMessage): string | undefined {
    const peer = req.socket.remoteAddress;
    if (peer === undefined || !this.o.trusts(peer))
      throw new UnauthenticatedError('X-Buyer-Id from an untrusted peer');
    const id = req.headers['x-buyer-id'];
    return Array.isArray(id) ? id.join(', ') : id;
  }
}

/** The buyer id as an id (it goes into Redis hash tags): anything else is no identity. */
function checked(buyer: string | undefined): string {
  if (buyer === undefined || buyer === '') throw new UnauthenticatedError('no buyer id');
  if (!userIdSchema.safeParse(buyer).success)
    throw new UnauthenticatedError('buyer id is not a valid userId');
  return buyer;
}

/** The body with userId set to the buyer; a body naming another userId is refused. */
function boundBody(body: unknown, buyer: string): unknown {
  const object = body ?? {};
  // Not an object: validation refuses it as it would any such body.
  if (typeof object !== 'object' || Array.isArray(object)) return body;
  const named = (object as { userId?: unknown }).userId;
  if (named !== undefined && named !== buyer) throw new BuyerMismatchError();
  return { ...object, userId: buyer };
}
