// `tsx src/db/migrate-cli.ts` / `node dist/src/db/migrate-cli.js`: applies pending migrations to
// DATABASE_URL and prints one line, so operators and CI see a result, not a stack trace.
import { ConfigError } from '../config/errors.ts';
import { loadSection } from '../config/load.ts';
import { UnavailableError } from '../errors.ts';
import { postgresProblem } from './connect-problem.ts';
import { checkDatabase, createDatabase } from './database.ts';
import { migrateToLatest } from './migrate.ts';

async function main(): Promise<number> {
  let url: string;
  try {
    ({ url } = loadSection('postgres'));
  } catch (err) {
    console.error(err instanceof ConfigError ? err.message : String(err));
    return 1;
  }
  const db = createDatabase(url, { max: 1 });
  try {
    await checkDatabase(db);
    const applied = await migrateToLatest(db);
    console.log(
      applied.length > 0
        ? `migrations applied: ${applied.join(', ')}`
        : 'database schema is up to date (no migrations to apply)',
    );
    return 0;
  } catch (err) {
    if (err instanceof UnavailableError) {
      console.error(postgresProblem(err, url));
    } else {
      console.error(`migration failed: ${err instanceof Error ? err.message : String(err)}`);
    }
    return 1;
  } finally {
    await db.destroy().catch(() => {});
  }
}

process.exitCode = await main();
