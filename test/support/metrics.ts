// Reading GET /metrics in tests: the samples of the Prometheus text exposition by series.
import assert from 'node:assert/strict';

/** Samples of a Prometheus text exposition: `name{labels}` -> value. */
export async function scrape(url: string): Promise<Map<string, number>> {
  const res = await fetch(`${url}/metrics`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
  const samples = new Map<string, number>();
  for (const line of (await res.text()).split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const cut = line.lastIndexOf(' ');
    samples.set(line.slice(0, cut), Number(line.slice(cut + 1)));
  }
  return samples;
}

/** The value of one series; fails when the series is not exposed. */
export function value(samples: Map<string, number>, key: string): number {
  const v = samples.get(key);
  assert.notEqual(v, undefined, `metric ${key} is not exposed`);
  return v as number;
}
