import { loadConfig } from '../../engine/platform/config';
import { connectDatabase, migrateLatest } from '../../engine/platform/database';

/** `npm run migrate`: apply pending migrations to DATABASE_URL (used by the scale-out deployment). */
async function main(): Promise<void> {
  const config = loadConfig();
  if (!config.databaseUrl) throw new Error('DATABASE_URL must be set to run migrations on their own.');
  const db = connectDatabase(config.databaseUrl, 2);
  try {
    const applied = await migrateLatest(db);
    console.log(applied.length ? `Applied: ${applied.join(', ')}` : 'Database is up to date.');
  } finally {
    await db.destroy();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
