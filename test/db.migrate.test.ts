// Schema migrations: the tables the app relies on exist, concurrent starts are safe, re-runs are
// no-ops, the provider loads only real migration modules, and the CLI fails with one clear line.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { type Kysely, sql } from 'kysely';
import { createTestDatabase, type TestDatabase } from '../harness/postgres.ts';
import { freePort } from '../harness/redis-server.ts';
import { createDatabase, type Database } from '../src/db/database.ts';
import { FolderMigrationProvider, MIGRATIONS_DIR, migrateToLatest } from '../src/db/migrate.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));

async function withDatabase<T>(fn: (db: Kysely<Database>, tdb: TestDatabase) => Promise<T>): Promise<T> {
  const tdb = await createTestDatabase();
  const db = createDatabase(tdb.url);
  try {
    return await fn(db, tdb);
  } finally {
    await db.destroy();
    await tdb.drop();
  }
}

async function columnTypes(db: Kysely<Database>, table: string): Promise<Record<string, string>> {
  const { rows } = await sql<{ column_name: string; data_type: string; is_nullable: string }>`
    select column_name, data_type, is_nullable from information_schema.columns
    where table_schema = 'public' and table_name = ${table}`.execute(db);
  return Object.fromEntries(
    rows.map((r) => [r.column_name, `${r.data_type}${r.is_nullable === 'NO' ? ' not null' : ''}`]),
  );
}

describe('migrations', () => {
  test('creates orders and admin_audit with the contract columns, indexes and checks', async () => {
    await withDatabase(async (db) => {
      assert.deepEqual(await migrateToLatest(db), [
        '0001_orders',
        '0002_per_user_limit',
        '0003_order_limit',
        '0004_order_lifecycle',
        '0005_withdrawn_orders',
      ]);
      // A withdrawn order's tombstone: what the writer checks before inserting a row.
      assert.deepEqual(await columnTypes(db, 'withdrawn_orders'), {
        id: 'text not null',
        product_id: 'text not null',
        user_id: 'text not null',
        quantity: 'integer not null',
        shard_key: 'text not null',
        withdrawn_at: 'timestamp with time zone not null',
      });

      assert.deepEqual(await columnTypes(db, 'orders'), {
        id: 'text not null',
        product_id: 'text not null',
        user_id: 'text not null',
        quantity: 'integer not null',
        shard_key: 'text not null',
        generation: 'integer not null',
        shard_index: 'integer not null',
        fencing_token: 'bigint not null',
        reserved_at: 'timestamp with time zone not null',
        created_at: 'timestamp with time zone not null',
        per_user_limit: 'integer',
        status: 'text not null',
        pay_by: 'timestamp with time zone',
      });
      assert.deepEqual(await columnTypes(db, 'order_status_history'), {
        order_id: 'text not null',
        status: 'text not null',
        at: 'timestamp with time zone not null',
      });
      assert.deepEqual(await columnTypes(db, 'admin_audit'), {
        id: 'bigint not null',
        at: 'timestamp with time zone not null',
        actor: 'text not null',
        action: 'text not null',
        product_id: 'text',
        before: 'jsonb',
        after: 'jsonb',
        request: 'jsonb',
      });

      const { rows: indexes } = await sql<{ indexdef: string }>`
        select indexdef from pg_indexes where tablename = 'orders' order by indexname`.execute(db);
      const defs = indexes.map((i) => i.indexdef.replace(/^.* USING btree /, ''));
      assert.deepEqual(defs.sort(), ['(id)', '(product_id)', '(product_id, user_id)']);

      const insert = (quantity: number) =>
        sql`
        insert into orders (id, product_id, user_id, quantity, shard_key, generation, shard_index,
                            fencing_token, reserved_at)
        values (${`o${quantity}`}, 'P', 'u', ${quantity}, 'stock:{P:1:0}', 1, 0, 1, now())`.execute(db);
      await assert.rejects(insert(0), (err: Error & { code?: string }) => err.code === '23514');
      await insert(2);
      const { rows } = await sql<{ created_at: Date }>`select created_at from orders`.execute(db);
      assert.ok(rows[0]?.created_at instanceof Date, 'created_at defaults to now()');
    });
  });

  test('four instances migrating a fresh database at once all succeed and apply it once', async () => {
    await withDatabase(async (_db, tdb) => {
      const instances = Array.from({ length: 4 }, () => createDatabase(tdb.url, { max: 2 }));
      try {
        const applied = await Promise.all(instances.map((db) => migrateToLatest(db)));
        assert.deepEqual(
          applied.flat(),
          [
            '0001_orders',
            '0002_per_user_limit',
            '0003_order_limit',
            '0004_order_lifecycle',
            '0005_withdrawn_orders',
          ],
          'exactly one instance applied each migration',
        );
        const [first] = instances;
        assert.ok(first);
        const { rows } = await sql<{ name: string }>`select name from kysely_migration`.execute(first);
        assert.deepEqual(
          rows.map((r) => r.name),
          [
            '0001_orders',
            '0002_per_user_limit',
            '0003_order_limit',
            '0004_order_lifecycle',
            '0005_withdrawn_orders',
          ],
        );
      } finally {
        await Promise.all(instances.map((db) => db.destroy()));
      }
    });
  });

  test('re-running is a no-op that keeps the data', async () => {
    await withDatabase(async (db) => {
      await migrateToLatest(db);
      await sql`insert into admin_audit (actor, action) values ('test', 'keep-me')`.execute(db);
      assert.deepEqual(await migrateToLatest(db), []);
      const { rows } = await sql<{ action: string }>`select action from admin_audit`.execute(db);
      assert.deepEqual(
        rows.map((r) => r.action),
        ['keep-me'],
      );
    });
  });

  test('migrateToLatest against a closed port throws UnavailableError', async () => {
    const db = createDatabase(`postgres://postgres@127.0.0.1:${await freePort()}/none`);
    try {
      await assert.rejects(migrateToLatest(db), { name: 'UnavailableError', code: 'unavailable' });
    } finally {
      await db.destroy();
    }
  });
});

describe('FolderMigrationProvider', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'flashsale-migrations-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('points at the top-level migrations folder', () => {
    assert.equal(MIGRATIONS_DIR, join(ROOT, 'migrations/'));
  });

  test('loads built .js migrations and ignores declarations, source maps and other files', async () => {
    // The dist layout: tsc emits .js, .d.ts and .js.map side by side.
    await writeFile(join(dir, '0001_a.js'), 'export async function up() {}\n');
    await writeFile(join(dir, '0001_a.d.ts'), 'export declare function up(): Promise<void>;\n');
    await writeFile(join(dir, '0001_a.js.map'), '{}\n');
    await writeFile(join(dir, '0002_b.js'), 'export default { async up() {}, async down() {} };\n');
    await writeFile(join(dir, 'README.md'), 'not a migration\n');
    const migrations = await new FolderMigrationProvider(dir).getMigrations();
    assert.deepEqual(Object.keys(migrations).sort(), ['0001_a', '0002_b']);
    assert.equal(typeof migrations['0002_b']?.down, 'function');
  });

  test('rejects a module without up()', async () => {
    const bad = await mkdtemp(join(tmpdir(), 'flashsale-migrations-'));
    try {
      await writeFile(join(bad, '0001_bad.js'), 'export const nothing = 1;\n');
      await assert.rejects(
        new FolderMigrationProvider(bad).getMigrations(),
        /does not export an up\(\) function/,
      );
    } finally {
      await rm(bad, { recursive: true, force: true });
    }
  });
});

describe('migrate CLI', () => {
  const cli = (env: Record<string, string>) =>
    run(process.execPath, ['--import', 'tsx', 'src/db/migrate-cli.ts'], {
      cwd: ROOT,
      env: { ...process.env, ...env },
    });

  test('applies the migrations and prints one line', async () => {
    await withDatabase(async (_db, tdb) => {
      const first = await cli({ DATABASE_URL: tdb.url });
      assert.equal(
        first.stdout,
        'migrations applied: 0001_orders, 0002_per_user_limit, 0003_order_limit, 0004_order_lifecycle, 0005_withdrawn_orders\n',
      );
      const second = await cli({ DATABASE_URL: tdb.url });
      assert.match(second.stdout, /^database schema is up to date/);
    });
  });

  test('unreachable Postgres: exit 1 and one clear line, no stack trace, no password', async () => {
    const url = `postgres://postgres:s3cret@127.0.0.1:${await freePort()}/none`;
    const failure = await cli({ DATABASE_URL: url }).then(
      () => assert.fail('the CLI should exit 1'),
      (err: { code: number; stdout: string; stderr: string }) => err,
    );
    assert.equal(failure.code, 1);
    assert.equal(failure.stdout, '');
    const lines = failure.stderr.trimEnd().split('\n');
    assert.equal(lines.length, 1, failure.stderr);
    assert.match(
      lines[0] ?? '',
      /^Postgres is unreachable at postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/none/,
    );
    assert.match(lines[0] ?? '', /start PostgreSQL or set DATABASE_URL$/);
    assert.doesNotMatch(failure.stderr, /s3cret/);
  });
});
