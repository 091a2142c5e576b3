// Streaming admission: a 200 text/event-stream answer to POST /api/orders is read event by event
// (parsed by eventsource-parser): every `queued` event is a place in line, the `result` event the answer.
import { EventSourceParserStream } from 'eventsource-parser/stream';
import { ProtocolError } from './errors.ts';
import type { QueuedPlace, ResultEvent } from './wire.ts';

/** True when the answer is a stream of events rather than a JSON answer. */
export function isEventStream(res: Response): boolean {
  return res.status === 200 && (res.headers.get('content-type') ?? '').startsWith('text/event-stream');
}

/**
 * Reads the stream to its `result` event, handing every `queued` event to `onQueued`; undefined when
 * the stream ends (or breaks) before its result: nothing was decided, come back with the ticket.
 */
export async function readEvents(
  res: Response,
  onQueued: (place: QueuedPlace) => void,
): Promise<ResultEvent | undefined> {
  if (!res.body) return undefined;
  const events = res.body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
  const reader = events.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return undefined;
      if (value.event === 'queued') onQueued(parse<QueuedPlace>(value.data));
      else if (value.event === 'result') return parse<ResultEvent>(value.data);
    }
  } catch (err) {
    if (err instanceof ProtocolError) throw err;
    return undefined; // the connection broke mid-stream: the same as a stream that ended
  } finally {
    reader.cancel().catch(() => {});
  }
}

function parse<T>(data: string): T {
  try {
    return JSON.parse(data) as T;
  } catch {
    throw new ProtocolError(`stream event is not JSON: ${data.slice(0, 120)}`);
  }
}
