// CI smoke test of the package as a user gets it: `npm pack`, then, in a fresh project, install the
// tarball with ioredis 5 and again with ioredis 6, check that nothing of the service came with it,
// type-check a TypeScript user, and run a plain-JS user against the local Redis (REDIS_URL).
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const pkgDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const nodeTypes = dirname(dirname(createRequire(import.meta.url).resolve('@types/node/package.json')));
/** Dependencies of the service that must never come with the lock package. */
const SERVICE_DEPS = ['express', 'bullmq', 'pg', 'kysely', 'pino', 'prom-client', 'zod', 'jose', 'uplot'];
/** Optional peers: npm must not install them unasked. */
const OPTIONAL_PEERS = ['etcd3', 'node-zookeeper-client'];
const IOREDIS_MAJORS = (process.env.SMOKE_IOREDIS ?? '5,6').split(',');

const run = (cmd, args, cwd) =>
  execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
const fail = (message) => {
  console.error(`smoke-tarball: ${message}`);
  process.exit(1);
};

/** The tarball `npm pack` makes (its prepack builds dist/), with its size and file list. */
function pack(dest) {
  const [info] = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', dest], pkgDir));
  const files = info.files.map((f) => f.path);
  for (const needed of [
    'dist/index.js',
    'dist/index.d.ts',
    'dist/toolkit.js',
    'dist/scripts/acquire.lua',
    'README.md',
    'CHANGELOG.md',
    'LICENSE',
  ]) {
    if (!files.includes(needed)) fail(`the tarball lacks ${needed}`);
  }
  const stray = files.filter((f) => !/^(dist\/|README\.md$|CHANGELOG\.md$|LICENSE$|package\.json$)/.test(f));
  if (stray.length > 0) fail(`the tarball has files a user does not need: ${stray.join(', ')}`);
  console.log(
    `tarball ${info.filename}: ${info.size} bytes packed, ${info.unpackedSize} unpacked, ${info.entryCount} files`,
  );
  return join(dest, info.filename);
}

/** Every package directory under node_modules (scoped ones included). */
function installed(modules) {
  const names = [];
  for (const entry of readdirSync(modules)) {
    if (entry.startsWith('.')) continue;
    if (entry.startsWith('@'))
      for (const sub of readdirSync(join(modules, entry))) names.push(`${entry}/${sub}`);
    else names.push(entry);
  }
  return names;
}

const TS_USER = `import { Cluster, Redis } from 'ioredis';
import { FairLock, type LockHandle, LockClient, ReadWriteLock, RedLock } from '@flashsale/lock';
import { lockKeys } from '@flashsale/lock/toolkit';
const redis = new Redis({ lazyConnect: true });
const locks = new LockClient(redis, { subscriber: redis.duplicate() });
new LockClient(new Cluster([], { lazyConnect: true }));
new RedLock([redis, new Redis({ lazyConnect: true })]);
new FairLock(locks);
new ReadWriteLock(locks).write.tryAcquire('x').then((h: LockHandle | null) => h?.token satisfies number | undefined);
export const key: string = lockKeys('x').lock;
`;

/** A fresh project with the tarball and ioredis@major; checks what came with it, then its types. */
function install(tarball, major) {
  const dir = mkdtempSync(join(tmpdir(), `lock-smoke-io${major}-`));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'smoke', private: true, type: 'module' }));
  run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', tarball, `ioredis@${major}`], dir);
  const names = installed(join(dir, 'node_modules'));
  const service = names.filter((n) => SERVICE_DEPS.includes(n) || n.startsWith('@types/'));
  if (service.length > 0) fail(`installing the tarball pulled in ${service.join(', ')}`);
  const peers = names.filter((n) => OPTIONAL_PEERS.includes(n));
  if (peers.length > 0) fail(`optional peers installed unasked: ${peers.join(', ')}`);
  const ioredis = JSON.parse(readFileSync(join(dir, 'node_modules/ioredis/package.json'), 'utf8')).version;
  if (!ioredis.startsWith(`${major}.`)) fail(`asked for ioredis ${major}, got ${ioredis}`);
  console.log(
    `ioredis ${ioredis}: ${names.length} packages in node_modules (tarball + ioredis and their dependencies)`,
  );
  writeFileSync(join(dir, 'user.ts'), TS_USER);
  const tsconfig = {
    compilerOptions: {
      strict: true,
      module: 'nodenext',
      moduleResolution: 'nodenext',
      target: 'es2022',
      noEmit: true,
      skipLibCheck: false,
      typeRoots: [nodeTypes],
      types: ['node'],
    },
    files: ['user.ts'],
  };
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(tsconfig));
  try {
    run(process.execPath, [tsc, '-p', dir], dir);
  } catch (err) {
    fail(`a TypeScript user does not compile against ioredis ${ioredis}:\n${err.stdout}`);
  }
  return dir;
}

/** Runs the plain-JS user; it must pass and then exit on its own (close() leaves nothing running). */
function runSmoke(dir) {
  writeFileSync(join(dir, 'smoke.mjs'), readFileSync(join(pkgDir, 'scripts/smoke-user.mjs')));
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['smoke.mjs'], {
      cwd: dir,
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      fail('the smoke test did not exit within 20 s: close() left something running');
    }, 20_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (code !== 0) fail(`the smoke test failed (exit ${code})`);
      resolve();
    });
  });
}

const work = mkdtempSync(join(tmpdir(), 'lock-pack-'));
const dirs = [work];
try {
  const tarball = pack(work);
  for (const major of IOREDIS_MAJORS) {
    const dir = install(tarball, major);
    dirs.push(dir);
    await runSmoke(dir);
  }
  console.log(`smoke-tarball: ok (${statSync(tarball).size} bytes; ioredis ${IOREDIS_MAJORS.join(' and ')})`);
} finally {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}
