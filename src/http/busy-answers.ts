// The 429 busy answers of orders refused on arrival, built once per Retry-After: under overload a
// refusal then costs no error object, no JSON and no header map (the order door writes them raw).
import { BusyError } from '../inventory/errors.ts';
import { errorAnswer } from './errors.ts';

export interface RawAnswer {
  status: number;
  /** Flat [name, value, ...] list, as writeHead takes it without copying into an object. */
  headers: string[];
  body: string;
}

const answers = new Map<number, RawAnswer>();

/**
 * The busy answer with this Retry-After (seconds).
 *
 * @example
 * const a = busyAnswer(2);
 * res.writeHead(a.status, a.headers).end(a.body);
 */
export function busyAnswer(retryAfterSeconds: number): RawAnswer {
  let answer = answers.get(retryAfterSeconds);
  if (answer === undefined) {
    const a = errorAnswer(new BusyError(undefined, retryAfterSeconds));
    const body = JSON.stringify(a.body);
    const headers = Object.entries({
      ...a.headers,
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': String(Buffer.byteLength(body)),
    }).flat();
    answer = { status: a.status, headers, body };
    answers.set(retryAfterSeconds, answer);
  }
  return answer;
}
