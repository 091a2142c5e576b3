// The doors of the API built from the security configuration (issue 25): the buyer's identity, who
// may mark an order paid, and the brake on wrong admin tokens; app.ts puts them on the routes.
import type { RequestHandler } from 'express';
import type { BuyerAuth } from '../config-security.ts';
import { adminTokenCheck } from './admin-auth.ts';
import { BuyerIdentity } from './buyer-identity.ts';
import { BuyerTokens } from './buyer-tokens.ts';
import { FailedAttempts } from './failed-attempts.ts';
import { requirePaymentSignature } from './payment-signature.ts';
import type { RateLimit } from './token-buckets.ts';

export interface DoorOptions {
  adminToken: string;
  buyerAuth: BuyerAuth;
  jwt: {
    secret?: string | undefined;
    publicKeyPem?: string | undefined;
    issuer?: string | undefined;
    audience?: string | undefined;
    clockSkewSeconds: number;
  };
  /** PAYMENT_WEBHOOK_SECRET: when set, paying is the provider's signed call. */
  paymentWebhookSecret?: string | undefined;
  /** Wrong admin tokens an address may send (ADMIN_AUTH_FAILURES); undefined: no brake. */
  adminFailures?: RateLimit | undefined;
}

export interface ApiDoors {
  identity: BuyerIdentity;
  /** Middleware of POST /api/orders/:id/pay: the provider's signature, or else the buyer. */
  payer: RequestHandler;
  adminFailures?: FailedAttempts | undefined;
}

export function apiDoors(o: DoorOptions): ApiDoors {
  const tokens = o.buyerAuth === 'jwt' ? new BuyerTokens(o.jwt) : undefined;
  const identity = new BuyerIdentity({ mode: o.buyerAuth, tokens, isAdmin: adminTokenCheck(o.adminToken) });
  const payer =
    o.paymentWebhookSecret === undefined ? identity.asBuyer : requirePaymentSignature(o.paymentWebhookSecret);
  return {
    identity,
    payer,
    adminFailures: o.adminFailures && new FailedAttempts(o.adminFailures),
  };
}
