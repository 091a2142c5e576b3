// A raw RESP connection for tests that must see the wire (ioredis speaks RESP2 only): commands written
// by hand, replies decoded by a tiny decoder, to check the lock scripts' replies under RESP3.
import { Socket } from 'node:net';

export class RespError extends Error {}

export type RespValue =
  | null
  | boolean
  | number
  | string
  | RespError
  | RespValue[]
  | Map<RespValue, RespValue>;

export interface RespReply {
  value: RespValue;
  /** The reply's bytes as sent by the server (latin1), e.g. "_\r\n" or "*2\r\n:1\r\n:1\r\n". */
  raw: string;
}

/**
 * Decodes one reply starting at `offset`: integer ':', null '_', array '*', bulk '$', simple '+',
 * error '-', plus map '%', boolean '#' and double ',' (HELLO 3 answers with a map), and RESP2's null
 * bulk/array ('$-1', '*-1'). Returns undefined while the buffer does not yet hold the whole reply.
 */
export function decodeResp(buf: Buffer, offset = 0): { value: RespValue; end: number } | undefined {
  const lineEnd = buf.indexOf('\r\n', offset, 'latin1');
  if (lineEnd < 0) return undefined;
  const type = String.fromCharCode(buf[offset] ?? 0);
  const line = buf.toString('utf8', offset + 1, lineEnd);
  const next = lineEnd + 2;
  switch (type) {
    case '+':
      return { value: line, end: next };
    case '-':
      return { value: new RespError(line), end: next };
    case ':':
      return { value: Number(line), end: next };
    case ',':
      return { value: Number(line), end: next };
    case '#':
      return { value: line === 't', end: next };
    case '_':
      return { value: null, end: next };
    case '$': {
      const len = Number(line);
      if (len < 0) return { value: null, end: next };
      if (buf.length < next + len + 2) return undefined;
      return { value: buf.toString('utf8', next, next + len), end: next + len + 2 };
    }
    case '*':
    case '%': {
      const count = Number(line);
      if (count < 0) return { value: null, end: next };
      const items: RespValue[] = [];
      let at = next;
      for (let i = 0; i < (type === '%' ? count * 2 : count); i++) {
        const item = decodeResp(buf, at);
        if (!item) return undefined;
        items.push(item.value);
        at = item.end;
      }
      if (type === '*') return { value: items, end: at };
      const map = new Map<RespValue, RespValue>();
      for (let i = 0; i < items.length; i += 2) map.set(items[i] ?? null, items[i + 1] ?? null);
      return { value: map, end: at };
    }
    default:
      throw new Error(
        `unsupported RESP type ${JSON.stringify(type)} in ${JSON.stringify(buf.toString('latin1'))}`,
      );
  }
}

export function encodeCommand(args: readonly (string | number)[]): Buffer {
  const parts: Buffer[] = [Buffer.from(`*${args.length}\r\n`)];
  for (const a of args) {
    const b = Buffer.from(String(a), 'utf8');
    parts.push(Buffer.from(`$${b.length}\r\n`), b, Buffer.from('\r\n'));
  }
  return Buffer.concat(parts);
}

/** One raw connection; replies are matched to commands in order (no pub/sub on it). */
export class RawRedis {
  private buf = Buffer.alloc(0);
  private readonly pending: Array<{ resolve: (r: RespReply) => void; reject: (e: unknown) => void }> = [];

  private constructor(private readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (err) => {
      for (const p of this.pending.splice(0)) p.reject(err);
    });
  }

  static connect(port: number, host = '127.0.0.1'): Promise<RawRedis> {
    return new Promise((resolve, reject) => {
      const socket = new Socket();
      socket.once('error', reject);
      socket.connect(port, host, () => {
        socket.off('error', reject);
        resolve(new RawRedis(socket));
      });
    });
  }

  command(...args: (string | number)[]): Promise<RespReply> {
    return new Promise((resolve, reject) => {
      this.pending.push({ resolve, reject });
      this.socket.write(encodeCommand(args));
    });
  }

  close(): void {
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    this.buf = Buffer.concat([this.buf, chunk]);
    for (;;) {
      const decoded = decodeResp(this.buf);
      if (!decoded) return;
      const raw = this.buf.toString('latin1', 0, decoded.end);
      this.buf = this.buf.subarray(decoded.end);
      this.pending.shift()?.resolve({ value: decoded.value, raw });
    }
  }
}
