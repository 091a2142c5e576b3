// npm test's preflight (scripts/system-deps.ts, its pretest): with programs missing it says, in one
// line and before any test runs, which and the Debian packages that bring them, and fails.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { freePort } from '../harness/redis-server.ts';

function preflight(path: string, env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/system-deps.ts', 'check'], {
    env: { ...process.env, PATH: path, ...env },
    encoding: 'utf8',
  });
  return { code: r.status, lines: r.stdout.split('\n').filter(Boolean), stderr: r.stderr };
}

describe('npm test preflight', () => {
  it('runs before the tests: it is npm test’s pretest', () => {
    const scripts = JSON.parse(readFileSync('package.json', 'utf8')).scripts as Record<string, string>;
    assert.match(scripts.pretest ?? '', /scripts\/system-deps\.ts check/);
    assert.match(scripts.setup ?? '', /scripts\/system-deps\.ts install/);
  });

  it('names every missing program and its Debian package in one line, and fails', () => {
    // A PATH with nothing on it: redis-server, redis-cli, etcd and etcdctl are not found.
    const empty = mkdtempSync(join(os.tmpdir(), 'flashsale-empty-path-'));
    try {
      const r = preflight(empty);
      assert.equal(r.code, 1, r.stderr);
      assert.equal(r.lines.length, 1, r.lines.join('\n'));
      const line = r.lines[0] as string;
      assert.match(line, /^preflight: npm test needs redis-server, redis-cli, etcd, etcdctl\b/);
      assert.match(line, /npm run setup/);
      assert.match(line, /redis-server redis-tools etcd-server etcd-client/);
      assert.equal(r.stderr, '');
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it('passes in one line where everything is installed (this machine, CI after npm run setup)', () => {
    const r = preflight(process.env.PATH ?? '');
    assert.equal(r.code, 0, r.lines.join('\n'));
    assert.deepEqual(r.lines.length, 1);
    assert.match(
      r.lines[0] as string,
      /^preflight: npm test has what it starts \(redis-server, .*libfaketime\) and its PostgreSQL$/,
    );
  });

  it('says so when the tests’ PostgreSQL does not let them in, in the same one line', async () => {
    const port = await freePort();
    const url = `postgres://postgres:pw@127.0.0.1:${port}/postgres`;
    const r = preflight(process.env.PATH ?? '', { TEST_PG_ADMIN_URL: url });
    assert.equal(r.code, 1);
    assert.equal(r.lines.length, 1, r.lines.join('\n'));
    const line = r.lines[0] as string;
    assert.ok(
      line.startsWith(
        `preflight: no PostgreSQL lets the tests in at postgres://postgres:***@127.0.0.1:${port}/postgres (ECONNREFUSED)`,
      ),
      line,
    );
    assert.match(line, /TEST_PG_ADMIN_URL/);
  });
});
