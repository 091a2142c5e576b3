// The system programs the repository's commands need, and which Debian package brings each:
// `check` (npm test's pretest) names what is missing in one line before any test runs (and whether
// the tests' PostgreSQL lets them in); `install`
// (npm run setup) installs it with apt-get on Debian as root, and says what to do elsewhere.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import pg from 'pg';
import { chromiumPath } from '../harness/browser.ts';
import { ADMIN_PG_URL } from '../harness/cleanup.ts';
import { findPgBin } from '../harness/pg-cluster.ts';
import { ZK_SERVER } from '../harness/zookeeper-server.ts';
import { findExecutable } from '../src/boot/dev/executable.ts';
import { redactUrl } from '../src/config/redact.ts';
import { PRELOAD } from '../test/support/fake-clock.ts';

/** One program: its name as a person knows it, its Debian package, who needs it, and whether it is here. */
interface Need {
  name: string;
  debian: string;
  /** `test`: npm test starts it; `ci`: only .ci/run's other steps (promtool checks, compose, partitions). */
  by: 'test' | 'ci';
  found: () => boolean;
}

const onPath = (name: string) => () => findExecutable(name) !== undefined;
const resolves = (find: () => unknown) => () => {
  try {
    find();
    return true;
  } catch {
    return false;
  }
};

const NEEDS: Need[] = [
  { name: 'redis-server', debian: 'redis-server', by: 'test', found: onPath('redis-server') },
  { name: 'redis-cli', debian: 'redis-tools', by: 'test', found: onPath('redis-cli') },
  { name: 'etcd', debian: 'etcd-server', by: 'test', found: onPath('etcd') },
  { name: 'etcdctl', debian: 'etcd-client', by: 'test', found: onPath('etcdctl') },
  { name: 'zkServer.sh', debian: 'zookeeperd', by: 'test', found: () => existsSync(ZK_SERVER) },
  { name: 'chromium', debian: 'chromium-headless-shell', by: 'test', found: resolves(chromiumPath) },
  { name: 'initdb', debian: 'postgresql', by: 'test', found: resolves(findPgBin) },
  {
    name: 'libfaketime',
    debian: 'libfaketime',
    by: 'test',
    found: () => PRELOAD.every((lib) => existsSync(lib)),
  },
  { name: 'promtool', debian: 'prometheus', by: 'ci', found: onPath('promtool') },
  { name: 'docker-compose', debian: 'docker-compose', by: 'ci', found: onPath('docker-compose') },
  { name: 'ip', debian: 'iproute2', by: 'ci', found: onPath('ip') },
];

/** Installs with apt-get; false when it cannot here (not Debian, not root). */
function aptInstall(packages: string[]): boolean {
  if (process.getuid?.() !== 0 || findExecutable('apt-get') === undefined) return false;
  process.stdout.write(`setup: installing ${packages.join(' ')} (apt-get)\n`);
  const apt = (...args: string[]) =>
    execFileSync('apt-get', args, {
      stdio: 'inherit',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  apt('update', '-qq');
  apt('install', '-y', '-qq', '--no-install-recommends', ...packages);
  return true;
}

const missing = (by: Array<Need['by']>) => NEEDS.filter((n) => by.includes(n.by) && !n.found());
const packagesOf = (needs: Need[]) => [...new Set(needs.map((n) => n.debian))].join(' ');

/**
 * Why the tests' PostgreSQL (TEST_PG_ADMIN_URL; they create a database per suite there) does not let
 * them in, or undefined when it does.
 */
async function postgresProblem(): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: ADMIN_PG_URL, connectionTimeoutMillis: 5000 });
  client.on('error', () => {});
  try {
    await client.connect();
    return undefined;
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    return `no PostgreSQL lets the tests in at ${redactUrl(ADMIN_PG_URL)} (${why}): start one that allows this role without a password from 127.0.0.1 (trust), or set TEST_PG_ADMIN_URL to a role that may create databases`;
  } finally {
    await client.end().catch(() => {});
  }
}

async function check(): Promise<number> {
  const absent = missing(['test']);
  const problems = [
    absent.length > 0 &&
      `npm test needs ${absent.map((n) => n.name).join(', ')}, not found: run npm run setup (Debian, root), or install the Debian packages ${packagesOf(absent)} (or your system's equivalents; CHROMIUM_PATH and PG_BIN point at a browser and PostgreSQL elsewhere)`,
    await postgresProblem(),
  ].filter((p): p is string => typeof p === 'string');
  if (problems.length === 0) {
    const names = NEEDS.filter((n) => n.by === 'test').map((n) => n.name);
    process.stdout.write(`preflight: npm test has what it starts (${names.join(', ')}) and its PostgreSQL\n`);
    return 0;
  }
  process.stdout.write(`preflight: ${problems.join('; ')}\n`);
  return 1;
}

function install(): number {
  const absent = missing(['test', 'ci']);
  if (absent.length === 0) {
    process.stdout.write('setup: every system program the tests and CI use is installed\n');
    return 0;
  }
  const packages = packagesOf(absent);
  if (aptInstall(packages.split(' '))) {
    const still = missing(['test', 'ci']);
    process.stdout.write(
      still.length === 0
        ? `setup: installed ${packages}\n`
        : `setup: still missing ${still.map((n) => n.name).join(', ')}\n`,
    );
    return still.length === 0 ? 0 : 1;
  }
  process.stdout.write(
    `setup: cannot install here (needs apt-get as root): on Debian run sudo apt-get install --no-install-recommends ${packages}; elsewhere install redis, etcd, ZooKeeper, Chromium, PostgreSQL and libfaketime with your package manager\n`,
  );
  return 1;
}

process.exitCode = process.argv[2] === 'install' ? install() : await check();
