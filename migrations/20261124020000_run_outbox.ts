import type { Knex } from 'knex';

/**
 * The outbox of runs to start on Temporal. A run request writes its execution row and one row here
 * in the same transaction, so an accepted run survives Temporal being down and the API dying right
 * after the 202; a dispatcher (engine/workflows/run-dispatcher.ts) starts the Temporal workflow,
 * whose workflow id is the execution id, and deletes the row. `available_at` is both the retry
 * backoff and a claim's lease: a dispatcher that dies holding a claim lets it lapse, and another
 * starts the run again, which Temporal answers as already started.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('workflow_run_outbox', (t) => {
    t.text('execution_id').primary().references('id').inTable('workflow_executions').onDelete('CASCADE');
    /** The interpreter's input (run-input.ts), exactly as it is handed to Temporal. */
    t.jsonb('input').notNullable();
    t.integer('attempts').notNullable().defaultTo(0);
    t.timestamp('available_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.text('last_error');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw('CREATE INDEX workflow_run_outbox_due ON workflow_run_outbox (available_at)');
}

export async function down(): Promise<void> {
  throw new Error('Migrations are forward-only in production.');
}
