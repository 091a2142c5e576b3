// The timeouts every HTTP server of a process is created with (the API's and the metrics server's):
// slow clients are cut, and Node's own check that headersTimeout < requestTimeout runs.
import type { ServerOptions } from 'node:http';
import type { HttpSection } from '../config/sections.ts';

/**
 * HTTP server limits, chosen for overload (README, "Connections under overload"): a refused order
 * must be an answer (429 + Retry-After), never a reset connection.
 * - keepAliveTimeout 65 s: longer than a load balancer's idle timeout (nginx 60 s), so the proxy
 *   always closes an idle connection first and never sends on one this server just closed. (Node
 *   times a request's headers from its first byte, so an idle keep-alive connection is not cut by
 *   headersTimeout.)
 * - headersTimeout (HTTP_HEADERS_TIMEOUT_MS, 12 s) below requestTimeout (HTTP_REQUEST_TIMEOUT_MS,
 *   30 s), checked every HTTP_CONNECTIONS_CHECK_MS (1 s): a client that trickles its headers or body
 *   is cut (slowloris), while a request whose bytes merely sat in a socket buffer during a busy
 *   moment is not. Given to createServer, so Node's own check that headers < request runs.
 */
export function serverOptions(http: HttpSection): ServerOptions {
  return {
    keepAliveTimeout: 65_000,
    headersTimeout: http.headersTimeoutMs,
    requestTimeout: http.requestTimeoutMs,
    connectionsCheckingInterval: http.connectionsCheckMs,
    // Node's own check answers HTTP/1.1 without Host a bare 400; the app answers it in JSON
    // (http/request-target.ts), and the metrics server needs no Host.
    requireHostHeader: false,
  };
}
