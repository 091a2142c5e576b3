// Which peers are trusted proxies (TRUST_PROXY), compiled once, and the client's address through them:
// what express's req.ip gives, for the order door, which answers without express's request object.
import type { IncomingMessage } from 'node:http';
import proxyAddr from 'proxy-addr';
import type { HttpSection } from '../config/sections.ts';

/** TRUST_PROXY's test of a peer, as express compiles it (`false`: nobody is trusted). */
export type Trust = (address: string, hop: number) => boolean;

/**
 * @example
 * const trust = compileTrust(config.http.trustProxy);
 * trust('127.0.0.1', 0); // true with TRUST_PROXY=loopback
 */
export function compileTrust(trustProxy: HttpSection['trustProxy']): Trust {
  return proxyAddr.compile(trustProxy === false ? [] : trustProxy);
}

/**
 * The client's address as express's req.ip gives it: the socket's peer, or the X-Forwarded-For hop
 * the trusted proxies vouch for. With nobody trusted, the peer, without parsing any header.
 */
export function clientAddress(
  req: IncomingMessage,
  trust: Trust,
  nobodyTrusted: boolean,
): string | undefined {
  return nobodyTrusted ? req.socket.remoteAddress : proxyAddr(req, trust);
}
