// The doors of the API built from the security configuration (issue 25): the buyer's identity, who
// may mark an order paid, and the brake on wrong admin tokens; app.ts puts them on the routes.
import type { RequestHandler } from 'express';
import type { AdminSection, BuyerSection } from '../config/load.ts';
import type { BuyerJwtSection, PaymentsSection } from '../config/sections.ts';
import type { RedisClient } from '../redis/connection.ts';
import { adminTokenCheck } from './admin-auth.ts';
import { BuyerIdentity } from './buyer-identity.ts';
import { BuyerTokens } from './buyer-tokens.ts';
import { FailedAttempts } from './failed-attempts.ts';
import { requirePaymentSignature } from './payment-signature.ts';

/** The configuration's sections the doors are built from. */
export interface DoorSections {
  admin: AdminSection;
  buyer: BuyerSection;
  buyerJwt: BuyerJwtSection;
  payments: PaymentsSection;
}

export interface ApiDoors {
  identity: BuyerIdentity;
  /** Middleware of POST /api/orders/:id/pay: the provider's signature, or else the buyer. */
  payer: RequestHandler;
  /** True when the buyer marks an order paid (no PAYMENT_WEBHOOK_SECRET): the shop page offers it. */
  buyerPays: boolean;
  adminFailures?: FailedAttempts | undefined;
}

export function apiDoors({ admin, buyer, buyerJwt, payments }: DoorSections, redis: RedisClient): ApiDoors {
  const tokens = buyer.auth === 'jwt' ? new BuyerTokens(buyerJwt) : undefined;
  const identity = new BuyerIdentity({ mode: buyer.auth, tokens, isAdmin: adminTokenCheck(admin.token) });
  const payer =
    payments.webhookSecret === undefined
      ? identity.asBuyer
      : requirePaymentSignature(payments.webhookSecret, redis);
  return {
    identity,
    payer,
    buyerPays: payments.webhookSecret === undefined,
    adminFailures: admin.failedAttempts && new FailedAttempts(admin.failedAttempts),
  };
}
