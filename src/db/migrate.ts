// Brings the schema up to date with the files in the top-level migrations/ folder. Safe to run from
// several processes at once: kysely's Migrator serialises them on a Postgres advisory lock.
import { readdir } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type Kysely, type Migration, type MigrationProvider, type MigrationResult, Migrator } from 'kysely';
import { FlashsaleError, UnavailableError } from '../errors.ts';
import { type Database, isConnectionError } from './database.ts';

// Same relative hop from src/db/ (tsx) and dist/src/db/ (built) to migrations/ and dist/migrations/.
export const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));

// .ts under tsx, .js after tsc; declarations and source maps sit beside the .js files in dist.
const MIGRATION_FILE = /^(?!.*\.d\.[cm]?ts$).+\.(?:[cm]?ts|[cm]?js)$/;

export class MigrationError extends FlashsaleError {
  constructor(message: string, migrationName: string | undefined, cause: unknown) {
    super('migration_failed', message, { migration: migrationName }, { cause });
  }
}

function isMigration(value: unknown): value is Migration {
  return typeof value === 'object' && value !== null && typeof (value as Migration).up === 'function';
}

/** Reads migrations/ itself so imports go through file URLs and only real modules are loaded. */
export class FolderMigrationProvider implements MigrationProvider {
  constructor(private readonly dir: string = MIGRATIONS_DIR) {}

  async getMigrations(): Promise<Record<string, Migration>> {
    const migrations: Record<string, Migration> = {};
    for (const file of (await readdir(this.dir)).sort()) {
      if (!MIGRATION_FILE.test(file)) continue;
      const name = file.slice(0, file.lastIndexOf('.'));
      if (name in migrations)
        throw new MigrationError(`migration ${name} exists twice in ${this.dir}`, name, null);
      const mod: unknown = await import(pathToFileURL(`${this.dir}/${file}`).href);
      const migration = isMigration(mod) ? mod : (mod as { default?: unknown }).default;
      if (!isMigration(migration)) {
        throw new MigrationError(`${file} does not export an up() function`, name, null);
      }
      migrations[name] = migration;
    }
    return migrations;
  }
}

/** Applies every pending migration; returns the names applied now (empty when already up to date). */
export async function migrateToLatest(db: Kysely<Database>, dir: string = MIGRATIONS_DIR): Promise<string[]> {
  const migrator = new Migrator({ db, provider: new FolderMigrationProvider(dir) });
  // kysely reports failure in the result instead of throwing, so it must be checked here.
  const { error, results = [] } = await migrator.migrateToLatest();
  if (error !== undefined) {
    if (isConnectionError(error)) throw new UnavailableError('Postgres', error);
    const failed = results.find((r: MigrationResult) => r.status === 'Error')?.migrationName;
    const reason = error instanceof Error ? error.message : String(error);
    throw new MigrationError(
      failed ? `migration ${failed} failed: ${reason}` : `migrations failed: ${reason}`,
      failed,
      error,
    );
  }
  return results.filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
