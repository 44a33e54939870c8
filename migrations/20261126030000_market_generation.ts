import type { Knex } from 'knex';

/**
 * API and worker processes keep the market in memory (engine/calculations/series-cache.ts). Every
 * statement that writes stored prices or the securities master, from any process (an import by the
 * `pas` CLI, another replica, psql), adds one to `market_generation.value` in its own transaction,
 * so the new value becomes visible exactly when the write does. A process reads this one row per
 * calculation and, while it is unchanged, reuses what it read before; when it moved, it checks each
 * series' version again. The statement also notifies channel `pas_market` when it commits (for
 * listeners that want to drop memory early; no reader depends on the notification).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE market_generation (
      id smallint PRIMARY KEY CHECK (id = 1),
      value bigint NOT NULL
    )`);
  await knex.raw('INSERT INTO market_generation (id, value) VALUES (1, 0)');
  await knex.raw(`
    CREATE FUNCTION pas_market_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE market_generation SET value = value + 1 WHERE id = 1;
      PERFORM pg_notify('pas_market', TG_TABLE_NAME);
      RETURN NULL;
    END
    $$`);
  for (const table of ['price_series', 'securities_master']) {
    await knex.raw(
      `CREATE TRIGGER ${table}_market_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON ${table}
       FOR EACH STATEMENT EXECUTE FUNCTION pas_market_changed()`,
    );
  }
}

export async function down(): Promise<void> {
  throw new Error('Migrations are forward-only in production.');
}
