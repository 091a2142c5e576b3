// The metrics HTTP server: GET /metrics and /healthz on PORT for the worker (a process without the
// API), or on METRICS_PORT for any process. It never stops the writer: a taken port is logged and skipped.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { WorkerConfig } from '../config/load.ts';
import type { Runtime } from './boot.ts';
import { serverOptions } from './server-options.ts';
import { closeServer } from './shutdown.ts';

/**
 * GET /metrics and /healthz on `port`: METRICS_PORT when set (then /metrics is not on the API port;
 * bound to METRICS_HOST, else HOST), else PORT on HOST (the worker's batch metrics); undefined when
 * the port is taken.
 */
export async function startMetricsServer(
  rt: Runtime<WorkerConfig>,
  port = rt.config.http.metricsPort ?? rt.config.http.port,
): Promise<Server | undefined> {
  const { config, logger, metrics } = rt;
  const server = createServer(serverOptions(config.http), (req, res) => {
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
  // METRICS_HOST binds METRICS_PORT only; the worker's metrics on PORT are on HOST as the API would be.
  const { metricsPort, metricsHost, host } = config.http;
  const bindTo = metricsPort !== undefined && port === metricsPort ? (metricsHost ?? host) : host;
  try {
    server.listen(port, bindTo);
    await once(server, 'listening');
  } catch (err) {
    logger.warn({ err, port }, 'metrics server not started (set PORT or METRICS_PORT to a free port)');
    return undefined;
  }
  const address = server.address();
  logger.info({ port: typeof address === 'object' && address ? address.port : port }, 'metrics listening');
  rt.closers.push(() => closeServer(server, config.shutdown.timeoutMs));
  return server;
}
