// The docs' code blocks keep working: every block of README.md and the packages' READMEs marked
// `<!-- snippet: run -->` runs, as copied but for the addresses, against a service on private
// infrastructure (sh with bash, js/ts with node + tsx); every block marked `typecheck` compiles; every
// js/ts block says which it is (`fragment` for an excerpt), so a new one cannot slip by unchecked.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { type CodeBlock, codeBlocks } from './support/snippets.ts';
import { useService } from './support/suite.ts';

const DOCS = ['README.md', 'packages/lock/README.md', 'packages/client/README.md'];
const DIR = resolve('.bench', 'snippets');
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const exec = promisify(execFile);

// The quick start's curl uses the development admin token.
const { infra, svc } = useService({ ADMIN_TOKEN: 'dev-admin-token' });

/** The block as copied, pointed at the private service and Redis instead of the defaults. */
function localized(code: string): string {
  const host = svc.url.replace('http://', '');
  return code
    .replaceAll('http://127.0.0.1:3000', svc.url)
    .replaceAll('localhost:3000', host)
    .replaceAll('redis://127.0.0.1:6379', infra.redis.url);
}

const fileOf = (doc: string, block: CodeBlock, ext: string) =>
  join(DIR, `${doc.replace(/\W+/g, '-')}-${block.line}.${ext}`);

async function runBlock(doc: string, block: CodeBlock): Promise<string> {
  const code = localized(block.code);
  const opts = { timeout: 60_000, encoding: 'utf8' as const };
  if (block.lang === 'sh') return (await exec('bash', ['-euo', 'pipefail', '-c', code], opts)).stdout;
  const file = fileOf(doc, block, block.lang === 'ts' ? 'mts' : 'mjs');
  writeFileSync(file, code);
  return (await exec(process.execPath, ['--import', 'tsx', file], opts)).stdout;
}

async function typecheck(doc: string, block: CodeBlock): Promise<void> {
  const file = fileOf(doc, block, 'ts');
  writeFileSync(file, `${block.code}\nexport {};\n`);
  const config = join(DIR, `${doc.replace(/\W+/g, '-')}-${block.line}.tsconfig.json`);
  writeFileSync(config, JSON.stringify({ extends: '../../tsconfig.json', include: [], files: [file] }));
  await exec(process.execPath, [tsc, '-p', config], { encoding: 'utf8' }).catch((err) => {
    assert.fail(`${doc}:${block.line} does not type-check:\n${err.stdout}`);
  });
}

describe('the docs’ code blocks', () => {
  mkdirSync(DIR, { recursive: true });
  const blocks = DOCS.map((doc) => [doc, codeBlocks(readFileSync(doc, 'utf8'))] as const);

  it('every js/ts block says whether it runs, type-checks or is a fragment', () => {
    const unmarked = blocks.flatMap(([doc, bs]) =>
      bs.filter((b) => ['js', 'ts'].includes(b.lang) && !b.mark).map((b) => `${doc}:${b.line}`),
    );
    assert.deepEqual(unmarked, []);
  });

  it('the blocks marked run run, in document order, and report no error', async () => {
    let ran = 0;
    for (const [doc, bs] of blocks) {
      for (const block of bs.filter((b) => b.mark === 'run')) {
        const out = await runBlock(doc, block);
        assert.doesNotMatch(out, /"error"|no order/, `${doc}:${block.line} printed: ${out}`);
        ran += 1;
      }
    }
    console.log(`ran ${ran} blocks of ${DOCS.join(', ')}`);
    assert.ok(ran >= 6, `only ${ran} blocks are marked to run`);
  });

  it('the blocks marked typecheck compile', async () => {
    const typed = blocks.flatMap(([doc, bs]) =>
      bs.filter((b) => b.mark === 'typecheck').map((b) => [doc, b] as const),
    );
    assert.ok(typed.length >= 1);
    for (const [doc, block] of typed) await typecheck(doc, block);
  });
});
