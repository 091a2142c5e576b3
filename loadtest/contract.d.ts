// Types of contract.js for the TypeScript side (local/): the outcome of an answer and its
// classifier; the k6 side checks contract.js itself.

export type Outcome = 'accepted' | 'sold_out' | 'queued' | 'busy' | 'rate_limited' | 'unexpected';

/** The place a 429 queued answer names. */
export interface Place {
  ticket: string;
  position: number;
  etaMs: number;
  retryAfterMs: number;
  available: number;
}

export function isPlace(body: Record<string, unknown> | null): body is Record<string, unknown> & Place;

export function parseDuration(text: string, examples?: string): number;

export function classifyAnswer(
  status: number,
  body: Record<string, unknown> | null,
  retryAfter: unknown,
  productId: string,
  userId: string | undefined,
): { outcome: Outcome; reason: string };
