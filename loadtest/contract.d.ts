// Types of contract.js for the TypeScript side (local/); the k6 side checks contract.js itself.

export type Outcome = 'accepted' | 'sold_out' | 'busy' | 'rate_limited' | 'unexpected';

export function parseDuration(text: string, examples?: string): number;

export function classifyAnswer(
  status: number,
  body: Record<string, unknown> | null,
  retryAfter: unknown,
  productId: string,
  userId: string | undefined,
): { outcome: Outcome; reason: string };
