// Streaming admission as the client takes it: a queued buyer asking for a stream
// (Accept: text/event-stream) is served in one request when the service offers streams (queued events,
// then one result event), and falls back to polling with its ticket when the service answers JSON.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createSale, drained } from '../../../harness/service.ts';
import { crowd } from '../../../test/support/crowd.ts';
import { useService } from '../../../test/support/suite.ts';
import { FlashsaleClient, type Progress } from '../src/index.ts';

const { infra, svc } = useService();
/** Buyers ahead that the service's idle capacity lets in within seconds. */
const SHORT_LINE = 5000;

/** Whether the service streams to a queued buyer: the content type of a raw POST asking for a stream. */
async function streams(productId: string): Promise<boolean> {
  const controller = new AbortController();
  const res = await fetch(`${svc.url}/api/orders`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({ productId, userId: 'probe' }),
    signal: controller.signal,
  });
  const type = res.headers.get('content-type') ?? '';
  // A stream closed before its turn leaves the line: the probe orders nothing.
  controller.abort();
  await res.body?.cancel().catch(() => {});
  assert.ok(res.status === 200 || res.status === 429, `${res.status} ${type}`);
  return res.status === 200 && type.startsWith('text/event-stream');
}

describe('placeOrder with streaming admission', () => {
  it('a queued buyer is served over the stream when offered one, else by polling with its ticket', async () => {
    await createSale(svc.url, 'c-stream', { stock: 5, shards: 1 });
    const other = await crowd(infra.client, svc.url, 'c-stream', SHORT_LINE);
    const offered = await streams('c-stream');
    const seen: Progress[] = [];
    const client = new FlashsaleClient({ baseUrl: svc.url, userId: 'ivan' });
    const result = await client.placeOrder({ productId: 'c-stream' }, { onProgress: (p) => seen.push(p) });
    other.room.stop();
    assert.equal(result.outcome, 'ordered', JSON.stringify(result));
    const queued = seen.filter((p) => p.phase === 'queued');
    assert.ok(queued.length >= 1, JSON.stringify(seen));
    // Over a stream every place comes as an event; without one, as 429 queued answers.
    assert.ok(
      queued.every((p) => p.streaming === offered),
      `offered a stream: ${offered}; ${JSON.stringify(queued)}`,
    );
    assert.ok(queued.every((p) => p.available === 5 || p.available === 4));
    assert.equal((await drained(svc.url, 'c-stream')).sold, 1);
    console.log(`streaming admission offered by the service: ${offered}`);
  });
});
