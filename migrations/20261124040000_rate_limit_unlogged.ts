import type { Knex } from 'knex';

/**
 * Rate-limit counters live for a minute and matter only while the server runs: UNLOGGED spares every
 * request's upsert a WAL write and the commit's flush to disk. After a crash PostgreSQL empties the
 * table, which only gives every caller a fresh window; standbys do not see it, which is the same.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE rate_limit_windows SET UNLOGGED');
}

export async function down(): Promise<void> {
  throw new Error('Migrations are forward-only in production.');
}
