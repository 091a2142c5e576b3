// `npm run bench:compare <commit>`: the core scenarios (a b c8 d) and the cheap answers of another
// commit and of this checkout side by side in one session, interleaved round by round, and the ratio
// of every figure (this / that). The other commit runs from a temporary git worktree whose
// node_modules links to this checkout's packages, its own workspace packages built in place
// (bench/lib/worktree-modules.ts). Settings: see bench/order/core-run.ts.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { createTestDatabase } from '../harness/postgres.ts';
import { startInfra } from '../harness/service.ts';
import { environment, repoRoot, writeJson } from './lib/output.ts';
import { foreignWorkspaces, linkModules } from './lib/worktree-modules.ts';
import { runCore } from './order/core-run.ts';
import type { Side } from './order/sides.ts';

const git = (...args: string[]) =>
  execFileSync('git', ['-C', repoRoot, ...args], { encoding: 'utf8' }).trim();
const log = (line: string) => process.stderr.write(`${line}\n`);

async function main(): Promise<number> {
  const commit = process.argv[2];
  if (!commit) {
    console.error('usage: npm run bench:compare <commit>');
    return 2;
  }
  const thatHash = git('rev-parse', '--short', `${commit}^{commit}`);
  const dirty = git('status', '--porcelain', '--untracked-files=no') !== '';
  // Product ids carry the side's name, so the two sides never share one even on the same commit.
  const thisName = `wt-${git('rev-parse', '--short', 'HEAD')}${dirty ? '-dirty' : ''}`;
  const dir = mkdtempSync(join(os.tmpdir(), 'flashsale-compare-'));
  git('worktree', 'add', '--detach', dir, thatHash);
  try {
    linkModules(repoRoot, dir);
    for (const w of foreignWorkspaces(repoRoot))
      log(`WARNING: in this checkout ${w} (its node_modules is shared)`);
    return await compare({ name: thatHash, root: dir }, { name: thisName, root: repoRoot });
  } finally {
    git('worktree', 'remove', '--force', dir);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Both sides in one session on private servers; the tables, .bench/compare.json, and the exit code. */
async function compare(that: Side, self: Side): Promise<number> {
  console.log(
    `Machine: ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown'}), load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}; ${that.name} (before) vs ${self.name} (this checkout), interleaved.`,
  );
  const infra = await startInfra();
  // The other commit's API migrates a database of its own: its migrations may differ from this
  // checkout's, which the shared one has. Orders reach the writer's (this checkout's) database only.
  const own = await createTestDatabase();
  try {
    const r = await runCore(infra, [{ ...that, env: { DATABASE_URL: own.url } }, self], self, log);
    console.log(
      `load average before ${r.loadavg.before.map((l) => l.toFixed(2)).join(' ')}, after ${r.loadavg.after.map((l) => l.toFixed(2)).join(' ')}`,
    );
    // Each measurement without its raw load result (latency arrays).
    const plain = (k: string, v: unknown) => (k === 'result' ? undefined : v);
    writeJson(
      'compare',
      JSON.parse(
        JSON.stringify(
          {
            environment: environment({ before: that.name, after: self.name, loadavg: r.loadavg }),
            core: Object.fromEntries(r.core),
            cheap: r.cheap && { ...r.cheap, api: Object.fromEntries(r.cheap.api) },
            checks: r.checks,
            violations: r.violations,
          },
          plain,
        ),
      ),
    );
    for (const v of r.violations) console.log(`VIOLATION [${v.scenario}] ${v.check}: ${v.detail}`);
    return r.violations.length > 0 ? 1 : 0;
  } finally {
    await infra.stop().catch(() => {});
    await own.drop().catch(() => {});
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
