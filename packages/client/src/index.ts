// @flashsale/client: the buyer's side of a flashsale service, for browsers and Node 20+ on fetch alone.
// The browser build (dist/browser.js) is this module with its one dependency bundled in.
export {
  type CallOptions,
  FlashsaleClient,
  type FlashsaleClientOptions,
  type PlaceOrderOptions,
} from './client.ts';
export { ApiError, FlashsaleClientError, ProtocolError, UnreachableError } from './errors.ts';
export type { PlaceOrderResult, Progress, RetryReason } from './results.ts';
export type { RetryOptions } from './timing.ts';
export type { ClientOptions } from './transport.ts';
export type * from './wire.ts';
