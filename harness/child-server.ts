// A server process a test owns (redis-server, etcd, ZooKeeper): spawned in its own process group with
// its own data dir, crashed with kill -9, hung with SIGSTOP, brought back on the same ports and data,
// and always stopped (its data dir removed) with the test. A subclass supplies its spawn and probe.
import type { ChildProcess, SpawnOptions } from 'node:child_process';
import { rmSync } from 'node:fs';
import { until } from './async.ts';
import { resourceDir, signalGroup, spawnOwned } from './cleanup.ts';

/**
 * Where a server or service process runs: an address and the command prefix that runs a program
 * there (`ip netns exec <ns>` for a network namespace of test/partitions). Default: this host's loopback.
 */
export interface Place {
  ip: string;
  wrap: string[];
}

export const LOOPBACK: Place = { ip: '127.0.0.1', wrap: [] };

/** spawnOwned of `command` at `place` (inside its namespace, when it has one). */
export function spawnAt(
  place: Place,
  command: string,
  args: string[],
  options: SpawnOptions,
  mustContain: string,
): ChildProcess {
  const [wrapper, ...wrapArgs] = place.wrap;
  return wrapper === undefined
    ? spawnOwned(command, args, options, mustContain)
    : spawnOwned(wrapper, [...wrapArgs, command, ...args], options, mustContain);
}

export abstract class ChildServer {
  private proc: ChildProcess | undefined;
  /** The server's own directory (data, config, logs), removed by stop(). */
  protected readonly dir: string;

  constructor(
    /** Names the server in errors and its directory. */
    private readonly what: string,
    /** How long a start may take before it is a failure (a JVM on a busy machine takes seconds). */
    private readonly startTimeoutMs: number,
    /** Where it runs (its address, its namespace). */
    readonly place: Place = LOOPBACK,
  ) {
    this.dir = resourceDir(what);
  }

  /** Starts the process (with spawnOwned, so it dies with the test process). */
  protected abstract launch(): ChildProcess;

  /** One look at whether the server answers as ready; false (never a throw) while it does not. */
  protected abstract ready(): Promise<boolean>;

  /** True while the server process runs (not killed). */
  get running(): boolean {
    return this.proc !== undefined && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** Launches the server and waits until its probe says ready; throws if it exits or never is. */
  protected async spawn(): Promise<void> {
    const proc = this.launch();
    this.proc = proc;
    // Readiness has no event to wait for: the probe is asked again until the start timeout.
    await until(
      `${this.what} to become ready`,
      async () => {
        if (proc.exitCode !== null) throw new Error(`${this.what} exited with ${proc.exitCode}`);
        return this.ready();
      },
      { timeoutMs: this.startTimeoutMs, everyMs: 25 },
    );
  }

  /** SIGKILL (a crash); restart() brings it back on the same ports and data. */
  async kill(): Promise<void> {
    const proc = this.proc;
    if (!proc || !this.running) return;
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    signalGroup(proc, 'SIGKILL');
    await exited;
  }

  async restart(): Promise<void> {
    await this.kill();
    await this.spawn();
  }

  /** SIGSTOP: the server stops answering with its connections open (a hung server). */
  pause(): void {
    if (this.proc) signalGroup(this.proc, 'SIGSTOP');
  }

  resume(): void {
    if (this.proc) signalGroup(this.proc, 'SIGCONT');
  }

  /** Kills the server (a paused one too) and removes its directory, even when the kill fails. */
  async stop(): Promise<void> {
    try {
      this.resume();
      await this.kill();
    } finally {
      rmSync(this.dir, { recursive: true, force: true });
    }
  }
}
