// One HTTP exchange with the service: the buyer's identity on every request, JSON in and out, and
// an answer read into status, headers and body (a streamed answer is handed back unread).
import { ProtocolError } from './errors.ts';
import type { ErrorBody } from './wire.ts';

/** Who the buyer is, as the deployment's `BUYER_AUTH` says, and where the service is. */
export interface ClientOptions {
  /** The service's origin, e.g. `https://shop.example`; default `''`: this page's origin (browsers only). */
  baseUrl?: string;
  /** `BUYER_AUTH=none`: the buyer's id, sent as the bodies' `userId`. Default: none sent. */
  userId?: string;
  /**
   * `BUYER_AUTH=jwt`: the buyer's token (sent as `Authorization: Bearer`), or a function asked before
   * every request (for a token that is refreshed). Default: none sent.
   */
  token?: string | (() => string | Promise<string>);
  /** More headers on every request (e.g. what a trusted proxy needs). Default none. */
  headers?: Record<string, string>;
  /** The `fetch` to use. Default: the global `fetch`. */
  fetch?: typeof fetch;
}

/** An answer read: its status, headers and JSON body. */
export interface Answer {
  status: number;
  headers: Headers | undefined;
  body: Record<string, unknown>;
}

export interface Exchange {
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

export class Transport {
  private readonly fetch: typeof fetch;

  constructor(readonly options: ClientOptions) {
    // Called unbound, a browser's fetch throws "Illegal invocation".
    this.fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  }

  /** Sends the request and answers the Response as is (the caller reads its body). */
  async send(x: Exchange): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json', ...this.options.headers };
    if (x.body !== undefined) headers['content-type'] = 'application/json';
    const token = typeof this.options.token === 'function' ? await this.options.token() : this.options.token;
    if (token) headers.authorization = `Bearer ${token}`;
    return this.fetch(`${this.options.baseUrl ?? ''}${x.path}`, {
      method: x.method,
      headers: { ...headers, ...x.headers },
      body: x.body === undefined ? undefined : JSON.stringify(x.body),
      signal: x.signal,
    });
  }

  /** Sends the request and reads its JSON answer. */
  async exchange(x: Exchange): Promise<Answer> {
    return read(await this.send(x));
  }

  /** The body with the buyer's `userId`, when the client was given one. */
  withBuyer<T extends object>(body: T): T & { userId?: string } {
    return this.options.userId === undefined ? body : { userId: this.options.userId, ...body };
  }
}

/** Reads a JSON answer; an empty body is `{}`, anything else not JSON a ProtocolError. */
export async function read(res: Response): Promise<Answer> {
  const text = await res.text();
  let body: Record<string, unknown> = {};
  if (text !== '') {
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      throw new ProtocolError(`${res.status} answer is not JSON: ${text.slice(0, 120)}`);
    }
  }
  return { status: res.status, headers: res.headers, body };
}

/** The body as an error body (the service always sends `error` and `message`). */
export function errorBody(answer: Answer): ErrorBody {
  const { error, message } = answer.body;
  return { ...answer.body, error: String(error ?? `http_${answer.status}`), message: String(message ?? '') };
}
