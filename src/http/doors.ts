// The doors of the API built from the security configuration (issue 25): the buyer's identity, who
// may mark an order paid, and the brake on wrong admin tokens; app.ts puts them on the routes.
import type { RequestHandler } from 'express';
import type { AdminSection, BuyerSection } from '../config/load.ts';
import type { BuyerJwtSection, HttpSection, PaymentsSection } from '../config/sections.ts';
import type { RedisClient } from '../redis/connection.ts';
import { adminTokenCheck } from './admin-auth.ts';
import { BuyerIdentity } from './buyer-identity.ts';
import { BuyerTokens } from './buyer-tokens.ts';
import { FailedAttempts } from './failed-attempts.ts';
import { requirePaymentSignature } from './payment-signature.ts';
import { compileTrust, type Trust } from './trust.ts';

/** The configuration's sections the doors are built from. */
export interface DoorSections {
  admin: AdminSection;
  buyer: BuyerSection;
  buyerJwt: BuyerJwtSection;
  payments: PaymentsSection;
  http: HttpSection;
}

export interface ApiDoors {
  identity: BuyerIdentity;
  /** Middleware of POST /api/orders/:id/pay: the provider's signature, or else the buyer. */
  payer: RequestHandler;
  adminFailures?: FailedAttempts | undefined;
  /** TRUST_PROXY, compiled: express's `trust proxy fn` and the order door's client address. */
  trust: Trust;
}

export function apiDoors(
  { admin, buyer, buyerJwt, payments, http }: DoorSections,
  redis: RedisClient,
): ApiDoors {
  const tokens = buyer.auth === 'jwt' ? new BuyerTokens(buyerJwt) : undefined;
  const trust = compileTrust(http.trustProxy);
  const identity = new BuyerIdentity({
    mode: buyer.auth,
    tokens,
    isAdmin: adminTokenCheck(admin.token),
    trusts: (address) => trust(address, 0),
  });
  const payer =
    payments.webhookSecret === undefined
      ? identity.asBuyer
      : requirePaymentSignature(payments.webhookSecret, redis);
  return {
    identity,
    payer,
    adminFailures: admin.failedAttempts && new FailedAttempts(admin.failedAttempts),
    trust,
  };
}
