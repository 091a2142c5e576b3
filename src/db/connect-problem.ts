// What stopped a first connection to Postgres, as the one line to print: the server refusing the
// database or the login names what to create or fix; anything else is "unreachable". No password.
import { redactUrl } from '../config/redact.ts';

/** The error under a connection failure (pg's, or the first of an AggregateError of addresses). */
function rootCause(err: unknown): unknown {
  const cause = err instanceof Error && err.cause !== undefined ? err.cause : err;
  return cause instanceof AggregateError ? cause.errors[0] : cause;
}

/**
 * The line naming what to fix after checkDatabase failed on `url`.
 *
 * @example
 * postgresProblem(err, 'postgres://app:pw@db/shop');
 * // 'Postgres at postgres://app:***@db/shop: database "shop" does not exist: create it or set DATABASE_URL'
 */
export function postgresProblem(err: unknown, url: string): string {
  const cause = rootCause(err);
  const code = (cause as { code?: unknown } | null)?.code;
  const message = cause instanceof Error && cause.message ? cause.message : String(cause);
  const at = redactUrl(url);
  // SQLSTATE 3D000 invalid_catalog_name: the server is there, the database is not.
  if (code === '3D000') return `Postgres at ${at}: ${message}: create it or set DATABASE_URL`;
  // Class 28 invalid authorization: a missing role, a wrong password, no pg_hba.conf entry.
  if (typeof code === 'string' && code.startsWith('28')) {
    return `Postgres at ${at} refused the login: ${message}: create the role, fix its password or set DATABASE_URL`;
  }
  return `Postgres is unreachable at ${at} (${message}): start PostgreSQL or set DATABASE_URL`;
}
