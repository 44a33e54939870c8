import type { Knex } from 'knex';

/**
 * Read-your-writes with a read replica (engine/platform/read-replica.ts): after a write request, the
 * primary's WAL position against the credential that wrote, shared by every API process. UNLOGGED:
 * a mark matters for seconds, so it spares each write request a WAL flush, and standbys never read it.
 * After a crash of the primary PostgreSQL empties it: until the replica has caught up with the
 * restarted primary, a caller may not see a write it made just before the crash.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE UNLOGGED TABLE credential_write_marks (
      credential_id text PRIMARY KEY,
      wal_lsn pg_lsn NOT NULL,
      written_at timestamptz NOT NULL
    )`);
}

export async function down(): Promise<void> {
  throw new Error('Migrations are forward-only in production.');
}
