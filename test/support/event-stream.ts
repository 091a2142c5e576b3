// POST /api/orders as a streaming buyer (Accept: text/event-stream): the JSON answer when the service
// decides at once, else the stream's events one by one, parsed by eventsource-parser.
import { type EventSourceMessage, EventSourceParserStream } from 'eventsource-parser/stream';
import { checkAnswer, checkOrderEvent } from '../../harness/openapi-contract.ts';

/** A streaming order: `json` when answered at once, else `next()` reads its events. */
export interface StreamedOrder {
  status: number;
  headers: Headers;
  json?: Record<string, unknown>;
  /** The next event (comments skipped), or undefined once the stream has ended. */
  next(): Promise<EventSourceMessage | undefined>;
  /** Closes the stream from the buyer's side (the buyer walks away). */
  close(): void;
}

/** Sends the order asking for a stream. */
export async function streamOrder(
  url: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<StreamedOrder> {
  const abort = new AbortController();
  const res = await fetch(`${url}/api/orders`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
    body: JSON.stringify(body),
    signal: abort.signal,
  });
  const close = () => abort.abort();
  if (!res.headers.get('content-type')?.startsWith('text/event-stream')) {
    const text = await res.text();
    checkAnswer('POST', '/api/orders', { status: res.status, headers: res.headers, text });
    const json = JSON.parse(text) as Record<string, unknown>;
    return { status: res.status, headers: res.headers, json, next: async () => undefined, close };
  }
  // The stream's status and headers now, each event as it is read (the OpenAPI contract).
  checkAnswer('POST', '/api/orders', { status: res.status, headers: res.headers, text: '' });
  const reader = (res.body as ReadableStream<Uint8Array>)
    .pipeThrough(new TextDecoderStream() as unknown as ReadableWritablePair<string, Uint8Array>)
    .pipeThrough(new EventSourceParserStream())
    .getReader();
  const read = async () => {
    try {
      return (await reader.read()).value;
    } catch {
      return undefined;
    }
  };
  const next = async () => {
    const value = await read();
    if (value?.event) checkOrderEvent(value.event, value.data);
    return value;
  };
  return { status: res.status, headers: res.headers, next, close };
}

/** The data of an event as JSON. */
export const data = (e: EventSourceMessage | undefined) =>
  JSON.parse(e?.data ?? 'null') as Record<string, unknown>;
