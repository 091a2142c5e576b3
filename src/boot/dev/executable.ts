// Finds a program the way a shell does: the first executable file of that name on PATH. Shared by
// the development run (is redis-server installed?) and the tests' preflight (scripts/system-deps.ts).
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * The path of `name` on `path` (PATH's format), or undefined when no directory has it executable.
 *
 * @example
 * findExecutable('redis-server'); // '/usr/bin/redis-server' where Debian's package is installed
 */
export function findExecutable(name: string, path = process.env.PATH ?? ''): string | undefined {
  for (const dir of path.split(delimiter).filter(Boolean)) {
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not in this directory
    }
  }
  return undefined;
}
