// Graceful stop: the one shutdown() that closes what a runtime started (last started first, so the
// servers stop taking requests before the writer drains), and the HTTP servers' part of it.
import type { Server, ServerResponse } from 'node:http';
import type { WorkerConfig } from '../config/load.ts';
import type { Runtime } from './boot.ts';

/** Closes what the runtime started, last started first, then its connections, then its dev servers. */
export async function shutdown(rt: Runtime<WorkerConfig>): Promise<void> {
  for (const close of [...rt.closers].reverse()) {
    await close().catch((err: unknown) => rt.logger.warn({ err }, 'close failed'));
  }
  await rt.db.destroy().catch(() => {});
  rt.redis.disconnect();
  // Last: a development run's own Redis and Postgres, once nothing uses them.
  for (const stop of rt.devServers) {
    await stop().catch((err: unknown) => rt.logger.warn({ err }, 'stopping a development server failed'));
  }
}

/**
 * Stops accepting connections and finishes in-flight requests. Keep-alive clients that keep sending
 * would hold server.close() open forever, so responses now carry `Connection: close`, idle sockets
 * are closed at once, and whatever is left is cut at half the shutdown budget.
 */
export function closeServer(server: Server, budgetMs: number): Promise<void> {
  server.on('request', (_req, res: ServerResponse) => res.setHeader('Connection', 'close'));
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const cut = setTimeout(() => server.closeAllConnections(), budgetMs / 2);
  cut.unref();
  return closed.finally(() => clearTimeout(cut));
}
