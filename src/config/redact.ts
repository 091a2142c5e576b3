// Secrets out of printed text: the one place that masks the password of a connection URL
// (REDIS_URL, DATABASE_URL), for startup lines, configuration errors and the migration CLI.

/** `scheme://user:password@` up to the authority's last `@` (a password may itself hold one). */
const USERINFO_PASSWORD = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#:@]*:)[^/?#]*@/;

/**
 * The URL with its password replaced by `***`, safe to print. Works on text that does not parse as
 * a URL too, so a malformed value is never printed with its secret.
 *
 * @example
 * redactUrl('redis://:secret@cache:6379'); // 'redis://:***@cache:6379'
 */
export function redactUrl(url: string): string {
  return url.replace(USERINFO_PASSWORD, '$1***@');
}
