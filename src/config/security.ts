// The security rules of the configuration (issue 25): what counts as production, which admin tokens
// are refused, the buyer authentication modes, and the parsers of secrets and JWT public keys.
import { createPublicKey } from 'node:crypto';
import { z } from 'zod';

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

/** Who the buyer is (BUYER_AUTH): a verified JWT's `sub`, a trusted proxy's X-Buyer-Id, or the body's userId. */
export const BUYER_AUTH_MODES = ['jwt', 'header', 'none'] as const;
export type BuyerAuth = (typeof BUYER_AUTH_MODES)[number];

/** True for NODE_ENV production in any case (`Production`, ` PRODUCTION `): never a development run. */
export const isProduction = (nodeEnv: string): boolean => nodeEnv.trim().toLowerCase() === 'production';

/** A secret of at least `min` characters; undefined when unset. */
export const secret = (min: number) =>
  z.string().min(min, `must be a secret of at least ${min} characters`).optional();

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

/** A PEM (SPKI) RSA or P-256 public key; undefined when unset. */
export const publicKeyPem = () =>
  z
    .string()
    .refine((v) => publicKeyAlgorithm(v) !== undefined, 'must be a PEM RSA or P-256 public key')
    .optional();
