// API_WORKERS=2: two API worker processes share one port under a cluster primary. A worker killed
// with kill -9 is replaced by a new process (a new pid), the other keeps answering orders meanwhile,
// and SIGTERM to the primary still stops everything gracefully (exit 0, no worker left behind).
import assert from 'node:assert/strict';
import http from 'node:http';
import { describe, it } from 'node:test';
import { until } from '../harness/async.ts';
import { admin, createSale, drained, spawnService } from '../harness/service.ts';
import { useInfra } from './support/suite.ts';

const { infra } = useInfra();

/** pids of the API workers that logged "api worker listening" so far (pino lines carry workerPid). */
function listeningWorkers(output: string): number[] {
  return output
    .split('\n')
    .filter((line) => line.includes('"api worker listening"'))
    .map((line) => (JSON.parse(line) as { workerPid: number }).workerPid);
}

/** One order on a fresh connection (no pooled socket of a killed worker can be picked). */
function order(url: string, userId: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ productId: 'clustered', userId });
    const req = http.request(
      `${url}/api/orders`,
      { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('API_WORKERS=2', () => {
  it('a worker killed with kill -9 is replaced while the other serves; SIGTERM stops them all', async () => {
    const main = await spawnService(infra, 'main', { API_WORKERS: '2' });
    let stopped = false;
    try {
      const [first, second] = await until('two workers', () => {
        const pids = listeningWorkers(main.output());
        return pids.length >= 2 ? pids : undefined;
      });
      assert.ok(first && second && first !== second && first !== main.proc.pid);
      await createSale(main.url, 'clustered', { stock: 1000, shards: 4 });
      let n = 0;
      const placeSome = async (count: number) => {
        for (let i = 0; i < count; i++) assert.equal(await order(main.url, `u${n++}`), 202);
      };
      await placeSome(10);

      process.kill(first, 'SIGKILL');
      await until('the primary to see the death', () =>
        main.output().includes('"api worker died; starting another"') ? true : undefined,
      );
      await placeSome(10);
      const replacement = await until('a replacement', () =>
        listeningWorkers(main.output()).find((pid) => pid !== first && pid !== second),
      );
      assert.ok(!alive(first), 'the killed worker is gone');
      assert.ok(alive(second) && alive(replacement));
      await placeSome(10);

      const s = await drained(main.url, 'clustered');
      assert.equal(s.sold, n);
      assert.equal(await infra.rows('clustered'), n);
      const rec = await fetch(`${main.url}/admin/products/clustered/reconcile`, { headers: admin });
      assert.equal(((await rec.json()) as { ok: boolean }).ok, true);

      assert.equal(await main.stop(), 0, main.output().slice(-2000));
      stopped = true;
      assert.ok(!alive(second) && !alive(replacement), 'no worker outlives the primary');
    } finally {
      if (!stopped) await main.kill();
    }
  });
});
