import { randomBytes } from 'node:crypto';
import knexFactory from 'knex';
import { connectDatabase, type Database, migrateLatest } from '../../engine/platform/database';

function adminUrl(): string {
  const url = process.env.TEST_DATABASE_ADMIN_URL;
  if (!url) throw new Error('TEST_DATABASE_ADMIN_URL is not set: run the suite through jest (global setup).');
  return url;
}

/** A fresh database per test file on the suite's real PostgreSQL server, migrated unless told not to. */
export async function createTestDatabase(
  options: { migrate?: boolean } = {},
): Promise<{ db: Database; url: string; drop(): Promise<void> }> {
  const name = `pas_test_${randomBytes(6).toString('hex')}`;
  const admin = knexFactory({ client: 'pg', connection: adminUrl(), pool: { min: 0, max: 1 } });
  await admin.raw(`CREATE DATABASE ${name}`);
  await admin.destroy();
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  const db = connectDatabase(url.toString(), 5);
  if (options.migrate !== false) await migrateLatest(db);
  return {
    db,
    url: url.toString(),
    async drop() {
      await db.destroy();
      const cleanup = knexFactory({ client: 'pg', connection: adminUrl(), pool: { min: 0, max: 1 } });
      await cleanup.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await cleanup.destroy();
    },
  };
}
