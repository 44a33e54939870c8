import knexFactory, { type Knex } from 'knex';
import pg from 'pg';
import { migrationSource } from './migrations-source';

// bigint columns (counters) come back as JS numbers; our counters stay far below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => Number(value));

export type Database = Knex;

export function connectDatabase(
  url: string,
  poolMax = 10,
  /**
   * `quiet`: knex's own line per failed connection attempt is left out, for a database whose outage
   * its owner reports (a read replica: checked twice a second, reported once per change).
   */
  options: { quiet?: boolean } = {},
): Database {
  return knexFactory({
    client: 'pg',
    connection: url,
    pool: { min: 0, max: poolMax },
    // Short: with the database down a request fails fast (503) instead of queueing for a connection.
    acquireConnectionTimeout: 5_000,
    ...(options.quiet ? { log: { warn: () => undefined } } : {}),
  });
}

/** Arbitrary constant naming the advisory lock that serialises migrations across processes. */
const MIGRATION_LOCK_KEY = 728_204_115;

/**
 * Runs pending migrations while holding a session advisory lock, so two api replicas (or an api
 * and a worker) starting together never migrate at once; the second waits, then finds nothing to do.
 */
export async function migrateLatest(db: Database): Promise<string[]> {
  const connection = await db.client.acquireConnection();
  try {
    await db.raw('SELECT pg_advisory_lock(?)', [MIGRATION_LOCK_KEY]).connection(connection);
    const [, applied] = (await db.migrate.latest({
      migrationSource,
      disableMigrationsListValidation: false,
    })) as [number, string[]];
    return applied;
  } finally {
    await db
      .raw('SELECT pg_advisory_unlock(?)', [MIGRATION_LOCK_KEY])
      .connection(connection)
      .catch(() => undefined);
    await db.client.releaseConnection(connection);
  }
}
