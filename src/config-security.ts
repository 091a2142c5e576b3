// The security section of the configuration (issue 25): who the buyer is (BUYER_AUTH), the payment
// provider's webhook secret, the admin door's token rules, connection limits and the metrics port.
import { createPublicKey } from 'node:crypto';
import { z } from 'zod';

const int = (def: number, min: number, max: number) => z.coerce.number().int().min(min).max(max).default(def);
const secret = (min: number) => z.string().min(min, `must be a secret of at least ${min} characters`);

/** Admin tokens that are published somewhere (README, compose file, tests): refused outside a development run. */
export const KNOWN_ADMIN_TOKENS: ReadonlySet<string> = new Set([
  'dev-admin-token',
  'local-dev-admin-token-change-me',
  'test-admin-token-0123456789',
  'changeme',
  'change-me',
  'admin',
  'secret',
]);
/** Shortest ADMIN_TOKEN outside a development run: 32 characters (e.g. `openssl rand -hex 24` gives 48). */
export const MIN_ADMIN_TOKEN_LENGTH = 32;

/** The one JWT algorithm a PEM public key verifies (RS256 for RSA, ES256 for P-256); undefined: not such a key. */
export function publicKeyAlgorithm(pem: string): 'RS256' | 'ES256' | undefined {
  try {
    const key = createPublicKey(pem);
    if (key.asymmetricKeyType === 'rsa') return 'RS256';
    if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1')
      return 'ES256';
    return undefined;
  } catch {
    return undefined;
  }
}

/** The environment variables of this section (merged into the configuration schema of src/config.ts). */
export const securityEnv = {
  /**
   * Who the buyer is: `jwt` (the `sub` of an `Authorization: Bearer` JWT), `header` (`X-Buyer-Id`
   * from a TRUST_PROXY peer) or `none` (the body's userId, trusting every caller). Required outside
   * a development run; a development run defaults to `none`.
   */
  BUYER_AUTH: z.enum(['jwt', 'header', 'none']).optional(),
  /** HS256 key of buyer JWTs (at least 32 characters). */
  BUYER_JWT_SECRET: secret(32).optional(),
  /** PEM (SPKI) public key of buyer JWTs: RS256 for an RSA key, ES256 for a P-256 key. */
  BUYER_JWT_PUBLIC_KEY: z
    .string()
    .refine((v) => publicKeyAlgorithm(v) !== undefined, 'must be a PEM RSA or P-256 public key')
    .optional(),
  /** Expected `iss` of buyer JWTs; unset: not checked. */
  BUYER_JWT_ISSUER: z.string().max(512).optional(),
  /** Expected `aud` of buyer JWTs; unset: not checked. */
  BUYER_JWT_AUDIENCE: z.string().max(512).optional(),
  /** Clock skew tolerated on `exp`/`nbf`/`iat`, seconds. Default 30, 0..300. */
  BUYER_JWT_CLOCK_SKEW_S: int(30, 0, 300),
  /**
   * HMAC-SHA256 key shared with the payment provider: when set, POST /api/orders/:id/pay must carry
   * X-Payment-Timestamp and X-Payment-Signature (at least 32 characters).
   */
  PAYMENT_WEBHOOK_SECRET: secret(32).optional(),
  /** Serve GET /metrics on this port (and not on the API port). Unset: /metrics on the API port. */
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  /** Longest a client may take to send a request's headers (slowloris). Default 12000, 100..60000. */
  HTTP_HEADERS_TIMEOUT_MS: int(12_000, 100, 60_000),
  /** Longest a client may take to send a whole request; above HTTP_HEADERS_TIMEOUT_MS. Default 30000. */
  HTTP_REQUEST_TIMEOUT_MS: int(30_000, 200, 600_000),
  /** How often the server looks for connections past those timeouts. Default 1000, 50..30000. */
  HTTP_CONNECTIONS_CHECK_MS: int(1000, 50, 30_000),
  /** Open connections per client address (TRUST_PROXY peers exempt); 0: no cap. Default 256. */
  HTTP_MAX_CONNECTIONS_PER_ADDRESS: int(256, 0, 100_000),
};

/** Who the buyer is (BUYER_AUTH). */
export type BuyerAuth = 'jwt' | 'header' | 'none';

type SecurityEnv = z.infer<z.ZodObject<typeof securityEnv>>;

/** A configuration value is missing or invalid; its message is the one line to print. */
export class ConfigError extends Error {}

/** True for NODE_ENV production in any case (`Production`, `PRODUCTION`). */
export const isProduction = (nodeEnv: string): boolean => nodeEnv.trim().toLowerCase() === 'production';

/**
 * The rules between variables of this section; answers the buyer authentication in force. `devRun`:
 * a development run (FLASHSALE_DEV_RUN=1, not production), where BUYER_AUTH defaults to `none` and
 * the admin token rules are relaxed.
 */
export function checkSecurity(
  c: SecurityEnv & { ADMIN_TOKEN: string; TRUST_PROXY: false | string[] },
  devRun: boolean,
): BuyerAuth {
  if (!devRun) checkAdminToken(c.ADMIN_TOKEN);
  const auth = c.BUYER_AUTH ?? (devRun ? 'none' : undefined);
  if (auth === undefined) {
    fail('BUYER_AUTH must be set to jwt, header or none outside a development run (FLASHSALE_DEV_RUN=1)');
  }
  if (auth === 'jwt' && (c.BUYER_JWT_SECRET === undefined) === (c.BUYER_JWT_PUBLIC_KEY === undefined)) {
    fail(
      'BUYER_AUTH=jwt needs exactly one of BUYER_JWT_SECRET (HS256) or BUYER_JWT_PUBLIC_KEY (RS256/ES256)',
    );
  }
  if (auth === 'header' && c.TRUST_PROXY === false) {
    fail('BUYER_AUTH=header needs TRUST_PROXY: X-Buyer-Id is believed only from those proxies');
  }
  if (c.HTTP_HEADERS_TIMEOUT_MS >= c.HTTP_REQUEST_TIMEOUT_MS) {
    fail('HTTP_HEADERS_TIMEOUT_MS must be below HTTP_REQUEST_TIMEOUT_MS');
  }
  return auth;
}

function checkAdminToken(token: string): void {
  if (KNOWN_ADMIN_TOKENS.has(token)) {
    fail('ADMIN_TOKEN is a published default; set a secret of your own (e.g. openssl rand -hex 24)');
  }
  if (token.length < MIN_ADMIN_TOKEN_LENGTH) {
    fail(
      `ADMIN_TOKEN must be a secret of at least ${MIN_ADMIN_TOKEN_LENGTH} characters outside a development run`,
    );
  }
}

function fail(message: string): never {
  throw new ConfigError(`invalid configuration: ${message}`);
}
