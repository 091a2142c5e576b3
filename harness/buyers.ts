// Buyers that follow the order protocol, for tests, benchmarks and load runs: @flashsale/client, with
// retries spaced for a test machine (shorter than a real client's, so tests stay quick).
import assert from 'node:assert/strict';
import { FlashsaleClient, type FlashsaleClientOptions } from '@flashsale/client';

/** Retries of busy/unavailable 20 ms doubling to 1 s, 200 in a row: a loaded test machine sheds for a while. */
export const TEST_RETRY = { baseDelayMs: 20, maxDelayMs: 1000, maxAttempts: 200 };

/** The client of buyer `userId` on the service at `url` (BUYER_AUTH=none). */
export function buyer(url: string, userId: string, options: FlashsaleClientOptions = {}): FlashsaleClient {
  return new FlashsaleClient({ baseUrl: url, userId, retry: TEST_RETRY, ...options });
}

/** Places the order through the whole protocol, asserting it ends ordered; its orderId. */
export async function ordered(url: string, productId: string, userId: string, quantity = 1): Promise<string> {
  const result = await buyer(url, userId).placeOrder({ productId, quantity });
  assert.equal(result.outcome, 'ordered', JSON.stringify(result));
  return result.outcome === 'ordered' ? result.order.orderId : '';
}
