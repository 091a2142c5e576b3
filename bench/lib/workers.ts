// Child processes for benchmarks: TypeScript entry points run under tsx with an IPC channel. Messages
// are buffered per worker so the parent can wait for a message of a given type with a deadline; a
// child that exits early fails every pending and future wait (a crash is never mistaken for slowness).
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export interface WorkerMessage {
  type: string;
}

export class WorkerCrashedError extends Error {}

export class Worker<In extends WorkerMessage, Out extends WorkerMessage> {
  private readonly inbox: Out[] = [];
  private readonly waiters: Array<{ type: string; resolve: (m: Out) => void; reject: (e: Error) => void }> =
    [];
  private exitError: Error | undefined;
  readonly exited: Promise<void>;

  constructor(
    readonly index: number,
    private readonly proc: ChildProcess,
    private readonly fatal: (m: Out) => string | undefined = () => undefined,
  ) {
    proc.on('message', (m: Out) => this.deliver(m));
    this.exited = new Promise((resolve) => {
      proc.once('exit', (code, signal) => {
        this.exitError = new WorkerCrashedError(
          `worker ${index} (pid ${proc.pid}) exited (code ${code}, signal ${signal})`,
        );
        for (const w of this.waiters.splice(0)) w.reject(this.exitError);
        resolve();
      });
    });
    proc.once('error', (err) => {
      this.exitError = err;
      for (const w of this.waiters.splice(0)) w.reject(err);
    });
  }

  get pid(): number | undefined {
    return this.proc.pid;
  }

  send(message: In): void {
    if (this.exitError) throw this.exitError;
    this.proc.send(message);
  }

  /** Resolves with the next message of `type` (buffered ones first); rejects on timeout or exit. */
  next<T extends Out['type']>(type: T, timeoutMs: number): Promise<Extract<Out, { type: T }>> {
    const i = this.inbox.findIndex((m) => m.type === type);
    if (i >= 0) return Promise.resolve(this.inbox.splice(i, 1)[0] as Extract<Out, { type: T }>);
    if (this.exitError) return Promise.reject(this.exitError);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        const at = this.waiters.indexOf(entry);
        if (at >= 0) this.waiters.splice(at, 1);
        reject(new Error(`worker ${this.index}: no '${type}' message within ${timeoutMs} ms`));
      }, timeoutMs);
      const entry = {
        type,
        resolve: (m: Out) => {
          clearTimeout(timer);
          resolve(m as Extract<Out, { type: T }>);
        },
        reject: (e: Error) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      this.waiters.push(entry);
    });
  }

  /** Asks nicely (disconnects IPC), then SIGKILLs after graceMs. */
  async stop(graceMs = 2_000): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    if (this.proc.connected) this.proc.disconnect();
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }

  private deliver(m: Out): void {
    const fatal = this.fatal(m);
    if (fatal !== undefined) {
      this.exitError ??= new WorkerCrashedError(
        `worker ${this.index} (pid ${this.proc.pid}) failed: ${fatal}`,
      );
      for (const w of this.waiters.splice(0)) w.reject(this.exitError);
      return;
    }
    const i = this.waiters.findIndex((w) => w.type === m.type);
    if (i >= 0) this.waiters.splice(i, 1)[0]?.resolve(m);
    else this.inbox.push(m);
  }
}

export interface SpawnOptions {
  /** Working directory of the children (tsx must be resolvable from it). */
  cwd: string;
  env?: NodeJS.ProcessEnv;
  /** Extra argv passed to every child after the script path. */
  args?: string[];
}

export interface WorkerOptions<Out extends WorkerMessage> extends SpawnOptions {
  /** Recognises a child's report of a fatal error (its text): every wait on that worker then fails with it. */
  fatal?: (m: Out) => string | undefined;
}

/** Starts `count` children running the TypeScript module `script` under tsx, each with an IPC channel. */
export function spawnWorkers<In extends WorkerMessage, Out extends WorkerMessage>(
  script: URL,
  count: number,
  options: WorkerOptions<Out>,
): Worker<In, Out>[] {
  const path = fileURLToPath(script);
  return Array.from({ length: count }, (_, index) => {
    const proc = spawn(process.execPath, ['--import', 'tsx', path, ...(options.args ?? [])], {
      cwd: options.cwd,
      env: { ...process.env, ...options.env, BENCH_WORKER_INDEX: String(index) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    return new Worker<In, Out>(index, proc, options.fatal);
  });
}

/** In the child: typed send to the parent; throws when not started with an IPC channel. */
export function sendToParent<Out extends WorkerMessage>(message: Out): Promise<void> {
  const send = process.send?.bind(process);
  if (!send) throw new Error('this module must be started by the benchmark with an IPC channel');
  return new Promise((resolve, reject) => {
    send(message, undefined, {}, (err: Error | null) => (err ? reject(err) : resolve()));
  });
}

/** Wall-clock sleep until `epochMs` (Date.now() based; parent and children share the host clock). */
export function sleepUntil(epochMs: number): Promise<void> {
  const delay = Math.max(0, epochMs - Date.now());
  return new Promise((resolve) => setTimeout(resolve, delay));
}
