// CI smoke test of the package as a user gets it: `npm pack`, then, in a fresh project, install the
// tarball (only it and eventsource-parser may come), type-check a TypeScript user, run the README's
// ten-line example against a service on private infrastructure (it must exit on its own), and import
// the tarball's browser build in headless Chromium, with no bundler, to place an order from the page.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchBrowser } from '../../../harness/browser.ts';
import { createSale, spawnService, startInfra } from '../../../harness/service.ts';
import { codeBlocks } from '../../../test/support/snippets.ts';

const pkgDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const ALLOWED = ['@flashsale/client', 'eventsource-parser'];

const run = (cmd: string, args: string[], cwd: string) =>
  execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
function fail(message: string): never {
  console.error(`smoke-tarball: ${message}`);
  process.exit(1);
}

function pack(dest: string): string {
  const [info] = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', dest], pkgDir));
  const files: string[] = info.files.map((f: { path: string }) => f.path);
  for (const needed of [
    'dist/index.js',
    'dist/index.d.ts',
    'dist/browser.js',
    'README.md',
    'CHANGELOG.md',
    'LICENSE',
  ])
    if (!files.includes(needed)) fail(`the tarball lacks ${needed}`);
  const stray = files.filter((f) => !/^(dist\/|README\.md$|CHANGELOG\.md$|LICENSE$|package\.json$)/.test(f));
  if (stray.length > 0) fail(`the tarball has files a user does not need: ${stray.join(', ')}`);
  console.log(
    `tarball ${info.filename}: ${info.size} bytes packed, ${info.unpackedSize} unpacked, ${info.entryCount} files`,
  );
  return join(dest, info.filename);
}

/** The README's blocks marked to run or type-check, as a user would paste them. */
function readmeUsers(): { example: string; typed: string } {
  const blocks = codeBlocks(readFileSync(join(pkgDir, 'README.md'), 'utf8'));
  const example = blocks.find((b) => b.mark === 'run')?.code;
  const typed = blocks.find((b) => b.mark === 'typecheck')?.code;
  if (!example || !typed) fail('the README has no example to run or type-check');
  return { example, typed };
}

function install(tarball: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'client-smoke-'));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'smoke', private: true, type: 'module' }));
  run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', tarball], dir);
  const modules = join(dir, 'node_modules');
  const names = readdirSync(modules)
    .filter((n) => !n.startsWith('.'))
    .flatMap((n) => (n.startsWith('@') ? readdirSync(join(modules, n)).map((s) => `${n}/${s}`) : [n]));
  const extra = names.filter((n) => !ALLOWED.includes(n));
  if (extra.length > 0) fail(`installing the tarball pulled in ${extra.join(', ')}`);
  const { example, typed } = readmeUsers();
  writeFileSync(join(dir, 'example.mjs'), example);
  writeFileSync(join(dir, 'user.ts'), `${typed}\nexport {};\n`);
  const compilerOptions = {
    strict: true,
    module: 'nodenext',
    target: 'es2022',
    lib: ['es2022', 'dom'],
    noEmit: true,
    types: [],
  };
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['user.ts'] }));
  try {
    run(process.execPath, [tsc, '-p', dir], dir);
  } catch (err) {
    fail(`the README's TypeScript user does not compile:\n${(err as { stdout?: string }).stdout}`);
  }
  console.log(`installed: ${names.join(', ')}; the README's TypeScript user compiles`);
  return dir;
}

/** Runs the README's example against `url`; it must order and exit on its own. */
function runExample(dir: string, url: string): Promise<void> {
  const source = readFileSync(join(dir, 'example.mjs'), 'utf8').replaceAll('http://127.0.0.1:3000', url);
  writeFileSync(join(dir, 'example.mjs'), source);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['example.mjs'], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      fail('the example did not exit within 30 s');
    }, 30_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (code !== 0 || !/^ordered /m.test(out)) fail(`the example failed (exit ${code}): ${out}`);
      console.log(`the README's example ran: ${out.trim().split('\n').at(-1)}`);
      resolve();
    });
  });
}

/** The tarball's dist/browser.js, imported by a page of the service's origin, places an order. */
async function inChromium(dir: string, url: string): Promise<void> {
  const bundle = readFileSync(join(dir, 'node_modules/@flashsale/client/dist/browser.js'), 'utf8');
  const chrome = await launchBrowser();
  try {
    const page = await chrome.browser.newPage();
    await page.setRequestInterception(true);
    page.on('request', (req) => {
      if (req.url().endsWith('/smoke/browser.js'))
        void req.respond({ status: 200, contentType: 'text/javascript', body: bundle });
      else void req.continue();
    });
    await page.goto(`${url}/healthz`);
    const outcome = await page.evaluate(async () => {
      const { FlashsaleClient } = await import(`${location.origin}/smoke/browser.js`);
      const result = await new FlashsaleClient({ userId: 'smoke-browser' }).placeOrder({ productId: 'p1' });
      return result.outcome as string;
    });
    if (outcome !== 'ordered') fail(`the browser build's order ended ${outcome}`);
    console.log('the browser build imports in Chromium without a bundler and orders');
  } finally {
    await chrome.close();
  }
}

const work = mkdtempSync(join(tmpdir(), 'client-pack-'));
const infra = await startInfra();
let dir: string | undefined;
try {
  dir = install(pack(work));
  const svc = await spawnService(infra, 'main');
  await createSale(svc.url, 'p1', { stock: 10, shards: 2 });
  await runExample(dir, svc.url);
  await inChromium(dir, svc.url);
  console.log('smoke-tarball: ok');
} finally {
  await infra.stop();
  for (const d of [work, dir]) if (d) rmSync(d, { recursive: true, force: true });
}
