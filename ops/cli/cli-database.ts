import { connect } from 'node:net';
import type { Config } from '../../engine/platform/config';
import { connectDatabase, type Database } from '../../engine/platform/database';
import { embeddedPostgresUrl, startEmbeddedPostgres } from '../embedded/embedded-postgres';

/** Whether something listens on 127.0.0.1:`port` (the embedded PostgreSQL of a running service). */
export function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * The connection string of the CLI's database: DATABASE_URL when set; else the embedded PostgreSQL
 * of `npm start` if it is running, or started just for this command (and stopped by `close`) when
 * it is not.
 */
export async function openCliDatabaseUrl(config: Config): Promise<{ url: string; close(): Promise<void> }> {
  if (config.databaseUrl) return { url: config.databaseUrl, close: () => Promise.resolve() };
  if (await portOpen(config.embeddedPostgresPort)) {
    // The server's password is in DATA_DIR, readable only by the service's user: the one who runs `pas`.
    return {
      url: await embeddedPostgresUrl(config.dataDir, config.embeddedPostgresPort, 'pas'),
      close: () => Promise.resolve(),
    };
  }
  const postgres = await startEmbeddedPostgres({
    dataDir: config.dataDir,
    port: config.embeddedPostgresPort,
    database: 'pas',
  });
  return { url: postgres.url, close: () => postgres.stop() };
}

/** The CLI's database (see openCliDatabaseUrl) as a knex instance; `close` also stops a server it started. */
export async function openCliDatabase(config: Config): Promise<{ db: Database; close(): Promise<void> }> {
  const target = await openCliDatabaseUrl(config);
  const db = connectDatabase(target.url, 2);
  return {
    db,
    async close() {
      await db.destroy();
      await target.close();
    },
  };
}
