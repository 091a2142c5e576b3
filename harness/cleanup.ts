// What a test process starts dies with it (exit, SIGTERM, SIGINT); a janitor removes what hard-killed
// runs left: resources are named after the owning pid (/tmp/flashsale-test-<pid>, flashsale_test_<pid>_…).
import { type ChildProcess, execFileSync, type SpawnOptions, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const PREFIX = 'flashsale-test-';
export const ADMIN_PG_URL = process.env.TEST_PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** A resource's synchronous release; entries are removed when the test releases it itself. */
const releases = new Map<string, () => void>();
let runDir: string | undefined;

/** Whether process `pid` exists (signal 0 checks without signalling). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The command line of `pid`, '' when it is gone. */
function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

/** SIGKILL to process `pid` (or its whole group, for a negative pid); never throws. */
function killNow(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

function dropDatabaseSync(name: string): void {
  spawnSync('psql', [ADMIN_PG_URL, '-qc', `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`], {
    stdio: 'ignore',
    timeout: 30_000,
  });
}

function releaseAll(): void {
  for (const release of [...releases.values()].reverse()) release();
  releases.clear();
  if (runDir) rmSync(runDir, { recursive: true, force: true });
}

let hooked = false;
function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', releaseAll);
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    process.once(signal, () => {
      releaseAll();
      process.exit(128 + (signal === 'SIGINT' ? 2 : signal === 'SIGHUP' ? 1 : 15));
    });
  }
}

/** This process's run directory (created on first use): records of what it started, for the janitor. */
function ownRunDir(): string {
  if (!runDir) {
    janitor();
    runDir = join(tmpdir(), `${PREFIX}${process.pid}`);
    mkdirSync(runDir, { recursive: true });
    hookExit();
  }
  return runDir;
}

/** A fresh directory for a resource of this process (removed with the run directory). */
export function resourceDir(what: string): string {
  const dir = join(ownRunDir(), `${what}-${Math.random().toString(36).slice(2, 10)}`);
  mkdirSync(dir);
  return dir;
}

/**
 * Registers a child process (with `group`: the leader of its own process group) to be SIGKILLed at
 * exit, and records it for the janitor with the text its command line must contain. Returns the
 * unregister function, for when the test has stopped it itself.
 */
export function killAtExit(pid: number, mustContain: string, group = false): () => void {
  const target = group ? -pid : pid;
  const record = join(ownRunDir(), `proc-${pid}`);
  writeFileSync(record, JSON.stringify({ target, mustContain }));
  const key = `proc:${pid}`;
  releases.set(key, () => killNow(target));
  return () => {
    releases.delete(key);
    rmSync(record, { force: true });
  };
}

/** Registers `release` (synchronous) to run at exit; returns the unregister function. */
export function atExit(key: string, release: () => void): () => void {
  ownRunDir();
  releases.set(key, release);
  return () => releases.delete(key);
}

/** A database name owned by this process: flashsale_test_<pid>_<random>; dropped at exit. */
export function ownedDatabaseName(): string {
  ownRunDir();
  return `flashsale_test_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
}

/** Drops `name` at exit unless the returned function is called first (the test dropped it). */
export function dropAtExit(name: string): () => void {
  return atExit(`db:${name}`, () => dropDatabaseSync(name));
}

let swept = false;
/**
 * Removes what dead test processes left behind: their recorded processes (only if the pid still runs
 * the recorded command, so a reused pid is never hit), run directories and databases.
 */
export function janitor(): void {
  if (swept) return;
  swept = true;
  for (const entry of readdirSync(tmpdir())) {
    const owner = Number(entry.slice(PREFIX.length));
    if (!entry.startsWith(PREFIX) || !Number.isInteger(owner) || owner === process.pid || alive(owner))
      continue;
    const dir = join(tmpdir(), entry);
    for (const file of readdirSync(dir).filter((f) => f.startsWith('proc-'))) {
      try {
        const { target, mustContain } = JSON.parse(readFileSync(join(dir, file), 'utf8')) as {
          target: number;
          mustContain: string;
        };
        if (commandLine(Math.abs(target)).includes(mustContain)) killNow(target);
      } catch {
        // a half-written record: its process, if any, had not been started
      }
    }
    rmSync(dir, { recursive: true, force: true });
  }
  let names: string[] = [];
  try {
    names = execFileSync(
      'psql',
      [ADMIN_PG_URL, '-Atc', "SELECT datname FROM pg_database WHERE datname LIKE 'flashsale\\_test\\_%'"],
      { encoding: 'utf8', timeout: 30_000 },
    )
      .split('\n')
      .filter(Boolean);
  } catch {
    return; // no Postgres here: the tests that need it will say so
  }
  for (const name of names) {
    const owner = Number(/^flashsale_test_(\d+)_[a-z0-9]+$/.exec(name)?.[1]);
    if (Number.isInteger(owner) && owner > 0 && !alive(owner)) dropDatabaseSync(name);
  }
}

/**
 * spawn() in a process group of its own, SIGKILLed (the whole group) if this process exits first;
 * `mustContain`: text of its command line, for the janitor's check after a hard kill.
 */
export function spawnOwned(
  command: string,
  args: string[],
  options: SpawnOptions,
  mustContain: string,
): ChildProcess {
  const proc = spawn(command, args, { ...options, detached: true });
  if (proc.pid !== undefined) {
    const forget = killAtExit(proc.pid, mustContain, true);
    proc.once('exit', forget);
  }
  return proc;
}

/** Sends `signal` to the process group `proc` leads (spawnOwned); never throws. */
export function signalGroup(proc: ChildProcess, signal: NodeJS.Signals): void {
  if (proc.pid === undefined) return;
  try {
    process.kill(-proc.pid, signal);
  } catch {
    // already gone
  }
}
