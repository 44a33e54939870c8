import type { Knex } from 'knex';

/**
 * Run history retention (engine/workflows/run-retention.ts): the purge walks finished runs oldest
 * end first and webhook payloads oldest first, a small batch at a time. Without these indexes each
 * batch would scan the whole table; partial, so running runs (updated on every step) cost nothing
 * to keep in it. The list of finished statuses repeats the purge's own, which the planner needs
 * word for word to use the index.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE INDEX workflow_executions_finished ON workflow_executions (ended_at)
     WHERE run_status IN ('SUCCEEDED', 'FAILED', 'CANCELED')`);
  await knex.raw('CREATE INDEX webhook_payloads_received ON webhook_payloads (received_at)');
}

export async function down(): Promise<void> {
  throw new Error('Migrations are forward-only in production.');
}
