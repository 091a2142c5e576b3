// Buyer JWTs (BUYER_AUTH=jwt), verified with jose: the algorithm pinned by the configured key (HS256
// for a secret, RS256/ES256 for a public key; never `none`), exp required, iss/aud when configured.
import { createPublicKey, createSecretKey, type KeyObject } from 'node:crypto';
import { errors, jwtVerify } from 'jose';
import { publicKeyAlgorithm } from '../config/security.ts';
import { UnauthenticatedError } from './auth-errors.ts';

export interface BuyerTokenOptions {
  /** HS256 key (BUYER_JWT_SECRET). */
  secret?: string | undefined;
  /** PEM public key (BUYER_JWT_PUBLIC_KEY): RS256 for RSA, ES256 for P-256. */
  publicKeyPem?: string | undefined;
  issuer?: string | undefined;
  audience?: string | undefined;
  clockSkewSeconds: number;
}

/** A JWT is three base64url parts; anything longer than this is not a buyer token worth verifying. */
const MAX_TOKEN_LENGTH = 8192;

/**
 * Verifies buyer tokens and answers their `sub`, or throws UnauthenticatedError.
 *
 * @example
 * const tokens = new BuyerTokens({ secret: process.env.BUYER_JWT_SECRET, clockSkewSeconds: 30 });
 * await tokens.subject(jwt); // 'alice'
 */
export class BuyerTokens {
  private readonly key: KeyObject;
  /** One algorithm, fixed by the key: a token cannot pick another (or `none`). */
  private readonly algorithm: string;

  constructor(private readonly o: BuyerTokenOptions) {
    const asymmetric = o.publicKeyPem === undefined ? undefined : publicKeyAlgorithm(o.publicKeyPem);
    if (o.secret !== undefined) {
      this.key = createSecretKey(Buffer.from(o.secret, 'utf8'));
      this.algorithm = 'HS256';
    } else if (o.publicKeyPem !== undefined && asymmetric !== undefined) {
      this.key = createPublicKey(o.publicKeyPem);
      this.algorithm = asymmetric;
    } else {
      throw new Error('BuyerTokens needs a secret or an RSA / P-256 public key');
    }
  }

  async subject(token: string): Promise<string> {
    if (token.length > MAX_TOKEN_LENGTH) throw new UnauthenticatedError('token too long');
    try {
      const { payload } = await jwtVerify(token, this.key, {
        algorithms: [this.algorithm],
        issuer: this.o.issuer,
        audience: this.o.audience,
        clockTolerance: this.o.clockSkewSeconds,
        requiredClaims: ['sub', 'exp'],
      });
      return payload.sub as string;
    } catch (err) {
      // jose's message says what failed (expired, claim, signature), never the key.
      if (err instanceof errors.JOSEError) throw new UnauthenticatedError(err.message);
      throw err;
    }
  }
}
