// A server's wall clock the test can step, with libfaketime preloaded into that one process (the
// machine's clock is never touched): an offset file libfaketime reads at every call.
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { resourceDir } from '../../harness/cleanup.ts';

const LIB = '/usr/lib/x86_64-linux-gnu';
/**
 * Debian's redis-server allocates with jemalloc, which libfaketime cannot start under (its first
 * clock_gettime comes from inside jemalloc's initialisation: wolfcw/libfaketime#130); glibc's
 * malloc-debug library, preloaded first, serves malloc/free instead and libfaketime starts cleanly.
 */
export const PRELOAD = [`${LIB}/libc_malloc_debug.so.0`, `${LIB}/faketime/libfaketime.so.1`];

export class FakeClock {
  private offsetS = 0;
  readonly file: string;

  constructor() {
    for (const lib of PRELOAD) {
      if (!existsSync(lib))
        throw new Error(`${lib} is missing: apt-get install libfaketime (and glibc's libc6)`);
    }
    this.file = join(resourceDir('faketime'), 'offset');
    writeFileSync(this.file, '+0\n');
  }

  /** The environment of the process whose clock this is. */
  get env(): Record<string, string> {
    return {
      LD_PRELOAD: PRELOAD.join(' '),
      FAKETIME_TIMESTAMP_FILE: this.file,
      FAKETIME_NO_CACHE: '1',
      // Only the wall clock (Redis: TIME, key expiry) steps; monotonic timers run on.
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
    };
  }

  /** Steps the clock `seconds` forward (from now on, every read of it). */
  step(seconds: number): void {
    this.offsetS += seconds;
    writeFileSync(this.file, `+${this.offsetS}s\n`);
  }
}
