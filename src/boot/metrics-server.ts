// The worker's own HTTP server: GET /metrics and /healthz on PORT, so a process without the API can
// be scraped. It never stops the writer: a taken port is logged and skipped.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { WorkerConfig } from '../config/load.ts';
import type { Runtime } from './boot.ts';
import { closeServer } from './shutdown.ts';

/** GET /metrics and /healthz on PORT (the worker's batch metrics); undefined when the port is taken. */
export async function startMetricsServer(rt: Runtime<WorkerConfig>): Promise<Server | undefined> {
  const { config, logger, metrics } = rt;
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/metrics') {
      metrics.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
        (err: unknown) => {
          logger.warn({ err }, 'metrics collection failed');
          res.writeHead(500).end();
        },
      );
    } else if (req.method === 'GET' && path === '/healthz') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
    } else {
      res.writeHead(404).end();
    }
  });
  try {
    server.listen(config.http.port, config.http.host);
    await once(server, 'listening');
  } catch (err) {
    logger.warn({ err, port: config.http.port }, 'metrics server not started (set PORT to a free port)');
    return undefined;
  }
  const address = server.address();
  logger.info(
    { port: typeof address === 'object' && address ? address.port : config.http.port },
    'metrics listening',
  );
  rt.closers.push(() => closeServer(server, config.shutdown.timeoutMs));
  return server;
}
