// Whether anything answers at a TCP address: a development run starts its own server only where the
// connection is refused (nothing listens), never beside something that merely answers slowly.
import net from 'node:net';

/** Longest wait for a connection to open or be refused; a silent address counts as taken. */
const PROBE_MS = 2000;

/** True unless a connection to host:port is refused (or the host does not resolve). */
export function answers(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (result: boolean) => {
      socket.destroy();
      resolve(result);
    };
    socket.setTimeout(PROBE_MS, () => done(true));
    socket.once('connect', () => done(true));
    socket.once('error', (err: NodeJS.ErrnoException) =>
      done(!['ECONNREFUSED', 'ENOTFOUND', 'EADDRNOTAVAIL'].includes(err.code ?? '')),
    );
  });
}

/**
 * Waits until host:port answers; throws when `exited` settles first (the server died, with why) or
 * after `withinMs`. Polls every 50 ms.
 */
export async function waitUntilAnswering(
  host: string,
  port: number,
  exited: Promise<string>,
  withinMs: number,
): Promise<void> {
  let gone: string | undefined;
  void exited.then((why) => {
    gone = why;
  });
  const deadline = Date.now() + withinMs;
  while (!(await answers(host, port))) {
    if (gone !== undefined) throw new Error(gone);
    if (Date.now() > deadline) throw new Error(`nothing answered at ${host}:${port} within ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
