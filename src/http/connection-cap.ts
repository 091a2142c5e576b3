// A cap on open connections per client address: one address cannot hold the server's connections
// (idle keep-alives, slow clients) on its own. Counted by socket, on the server's 'connection' event.
import type { Server } from 'node:net';

/** This host itself (a local proxy or sidecar, a load test on the same machine): never capped. */
export function isLoopback(address: string): boolean {
  return address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.');
}

/**
 * Closes at once a new connection from an address that already holds `max`. `exempt` addresses (the
 * TRUST_PROXY peers: every client behind a proxy shares its address; the proxy has limits of its own)
 * are not counted, and neither is loopback. Memory: one map entry per address with a connection open.
 */
export function capConnectionsPerAddress(
  server: Server,
  max: number,
  exempt: (address: string) => boolean,
  onRefused?: () => void,
): void {
  const open = new Map<string, number>();
  server.on('connection', (socket) => {
    const address = socket.remoteAddress;
    if (address === undefined || isLoopback(address) || exempt(address)) return;
    const n = open.get(address) ?? 0;
    if (n >= max) {
      onRefused?.();
      socket.destroy();
      return;
    }
    open.set(address, n + 1);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left > 0) open.set(address, left);
      else open.delete(address);
    });
  });
}
