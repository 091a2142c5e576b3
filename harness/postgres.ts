// A fresh Postgres database per test suite, dropped afterwards (or at the test process's exit, or by
// the janitor after a hard kill): tests never see data they did not create.
import pg from 'pg';
import { ADMIN_PG_URL, dropAtExit, ownedDatabaseName } from './cleanup.ts';

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const name = ownedDatabaseName();
  const forget = dropAtExit(name);
  const admin = new pg.Client({ connectionString: ADMIN_PG_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(ADMIN_PG_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    async drop() {
      const c = new pg.Client({ connectionString: ADMIN_PG_URL });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        forget();
      } finally {
        await c.end();
      }
    },
  };
}
