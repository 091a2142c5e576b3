// The doors of the API built from the security configuration (issue 25): the buyer's identity, who
// may mark an order paid, and the one brake on the admin token; app.ts puts them on the routes.
import type { RequestHandler } from 'express';
import type { AdminSection, BuyerSection } from '../config/load.ts';
import type { BuyerJwtSection, HttpSection, PaymentsSection } from '../config/sections.ts';
import type { RedisClient } from '../redis/connection.ts';
import { AdminBrake } from './admin-brake.ts';
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
  /** The admin token's check and brake: every door that accepts the token goes through it. */
  adminBrake: AdminBrake;
  /** TRUST_PROXY, compiled: express's `trust proxy fn` and the order door's client address. */
  trust: Trust;
}

/** `onAdminFailure` hears every wrong admin token, and whether its address is braked (metrics). */
export function apiDoors(
  { admin, buyer, buyerJwt, payments, http }: DoorSections,
  redis: RedisClient,
  onAdminFailure?: (braked: boolean) => void,
): ApiDoors {
  const failures = admin.failedAttempts && new FailedAttempts(admin.failedAttempts);
  const adminBrake = new AdminBrake(admin.token, failures, onAdminFailure);
  const tokens = buyer.auth === 'jwt' ? new BuyerTokens(buyerJwt) : undefined;
  const trust = compileTrust(http.trustProxy);
  const identity = new BuyerIdentity({
    mode: buyer.auth,
    tokens,
    admin: adminBrake,
    trusts: (address) => trust(address, 0),
  });
  const payer =
    payments.webhookSecret === undefined
      ? identity.asBuyer
      : requirePaymentSignature(payments.webhookSecret, redis);
  return { identity, payer, adminBrake, trust };
}
