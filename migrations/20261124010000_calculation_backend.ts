import type { Knex } from 'knex';

/**
 * The installation's simulation backend (methodology §5: one installation computes with one
 * backend). With CALC_BACKEND=auto the first process to start (API or worker) runs the probe and
 * records its choice here; every later process, on any host, starts the recorded backend instead of
 * probing again, so a request gives the same numbers through the endpoint and through a workflow
 * step. One row at most (`id` is always 1). Deleting the row makes the next process to start probe
 * again (after a hardware change, say).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('calculation_backend', (t) => {
    t.integer('id').primary();
    t.text('name').notNullable();
    /** The probe's best-of-two milliseconds per candidate, or why one was skipped or failed. */
    t.jsonb('probe_ms').notNullable();
    t.timestamp('chosen_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw('ALTER TABLE calculation_backend ADD CONSTRAINT calculation_backend_one_row CHECK (id = 1)');
}

export async function down(): Promise<void> {
  throw new Error('Migrations are forward-only in production.');
}
