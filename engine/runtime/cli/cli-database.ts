import { connect } from 'node:net';
import type { Config } from '../../platform/config';
import { connectDatabase, type Database } from '../../platform/database';
import { embeddedPostgresUrl, startEmbeddedPostgres } from '../embedded-postgres';

function portOpen(port: number): Promise<boolean> {
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
 * The CLI's database: DATABASE_URL when set; else the embedded PostgreSQL of `npm start` if it is
 * running, or started just for this command (and stopped after it) when it is not.
 */
export async function openCliDatabase(config: Config): Promise<{ db: Database; close(): Promise<void> }> {
  if (config.databaseUrl) {
    const db = connectDatabase(config.databaseUrl, 2);
    return { db, close: () => db.destroy() };
  }
  if (await portOpen(config.embeddedPostgresPort)) {
    // The server's password is in DATA_DIR, readable only by the service's user: the one who runs `pas`.
    const db = connectDatabase(
      await embeddedPostgresUrl(config.dataDir, config.embeddedPostgresPort, 'pas'),
      2,
    );
    return { db, close: () => db.destroy() };
  }
  const postgres = await startEmbeddedPostgres({
    dataDir: config.dataDir,
    port: config.embeddedPostgresPort,
    database: 'pas',
  });
  const db = connectDatabase(postgres.url, 2);
  return {
    db,
    async close() {
      await db.destroy();
      await postgres.stop();
    },
  };
}
