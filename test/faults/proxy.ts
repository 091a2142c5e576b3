// A TCP proxy between clients and Redis that injects network faults: stall (the bytes clients send
// are held and delivered later: a network pause, so a lock holder's command arrives after its lease
// lapsed) and cut (replies are dropped, then every connection is reset: commands Redis already
// executed lose their answer, as when a connection breaks with replies in flight).
import net from 'node:net';

export class FaultProxy {
  private stalled = false;
  private swallowing = false;
  /** Connections reset by cut() so far. */
  cutConnections = 0;
  private readonly held: Array<() => void> = [];
  private readonly sockets = new Set<net.Socket>();

  private constructor(
    private readonly server: net.Server,
    readonly port: number,
  ) {}

  /** `listenHost`: the address it listens on (a port of its own is picked). */
  static async start(
    targetPort: number,
    targetHost = '127.0.0.1',
    listenHost = '127.0.0.1',
  ): Promise<FaultProxy> {
    let proxy: FaultProxy | undefined;
    const server = net.createServer((client) => {
      const upstream = net.connect(targetPort, targetHost);
      const p = proxy as FaultProxy;
      p.sockets.add(client);
      p.sockets.add(upstream);
      client.on('data', (chunk) => {
        if (p.stalled) p.held.push(() => upstream.write(chunk));
        else upstream.write(chunk);
      });
      upstream.on('data', (chunk) => {
        if (!p.swallowing) client.write(chunk);
      });
      const close = () => {
        client.destroy();
        upstream.destroy();
        p.sockets.delete(client);
        p.sockets.delete(upstream);
      };
      client.on('close', close);
      upstream.on('close', close);
      client.on('error', close);
      upstream.on('error', close);
    });
    await new Promise<void>((resolve) => server.listen(0, listenHost, resolve));
    const address = server.address();
    proxy = new FaultProxy(server, typeof address === 'object' && address ? address.port : 0);
    return proxy;
  }

  /** Holds every byte clients send from now on (in order) until resume(). */
  stall(): void {
    this.stalled = true;
  }

  /** Delivers what was held, in order, and lets traffic flow again. */
  resume(): void {
    this.stalled = false;
    for (const send of this.held.splice(0)) send();
  }

  /**
   * Drops every reply for `swallowMs` (commands still reach Redis and run), then resets every
   * connection: the clients see a broken connection with commands whose answer never came.
   */
  async cut(swallowMs: number): Promise<void> {
    this.swallow();
    await new Promise((resolve) => setTimeout(resolve, swallowMs));
    this.reset();
  }

  /** Drops every reply from now on (commands still reach the server and run), until reset(). */
  swallow(): void {
    this.swallowing = true;
  }

  /** Resets every connection and lets replies through again: the clients reconnect. */
  reset(): void {
    for (const s of this.sockets) s.destroy();
    this.cutConnections += this.sockets.size / 2;
    this.sockets.clear();
    this.swallowing = false;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
