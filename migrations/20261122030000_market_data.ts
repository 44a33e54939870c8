import type { Knex } from 'knex';

/**
 * Market data: one row per symbol holding the whole daily series as two parallel arrays.
 *
 * A calculation reads every series of up to 3000 positions at once; one array row per symbol is a
 * single index probe and a contiguous read each, where a row per (symbol, date) would fetch and
 * decode ~30 million tuples for the same request. Dates are day numbers (days since 1970-01-01, the
 * form calc/ consumes without parsing), strictly ascending; only observed prices are stored (a
 * missing price is an absent date), so `values` never holds NaN. Series are global, like the
 * securities master: an account's own series are its CUSTOM:* indexes and PRIVATE:* securities.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('price_series', (t) => {
    t.text('symbol').primary().references('securities_master.symbol');
    t.specificType('dates', 'int4[]').notNullable();
    t.specificType('values', 'float8[]').notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
  });
  await knex.raw(
    'ALTER TABLE price_series ADD CONSTRAINT price_series_same_length CHECK (cardinality(dates) = cardinality("values"))',
  );
  // Where a symbol's prices came from (file name and column), shown by `pas market symbols`.
  await knex.schema.alterTable('securities_master', (t) => {
    t.text('price_source');
  });
}

export async function down(): Promise<void> {
  throw new Error('Migrations are forward-only in production.');
}
