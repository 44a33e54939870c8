import type { Knex } from 'knex';

/**
 * Re-running a failed execution from its failed step (POST .../workflow_executions/:id/retry).
 *
 * - `run_definitions`: the workers and plan runs were started with, stored once per distinct
 *   definition (keyed by the SHA-256 of its JSON: a workflow run a thousand times with the same
 *   definition, inline scripts and all, is one row), so a retry runs the same definition version
 *   even after the workflow was edited. Temporal keeps it too, in the start event, but only for the
 *   namespace's retention period.
 * - `workflow_executions.definition_sha256`: the definition the run started with; null for runs
 *   recorded before.
 * - `workflow_executions.retry_of`: the failed execution a retry re-runs. Unique: a failed
 *   execution is retried once (retry the retry if that fails too), so two retry requests racing,
 *   or a bulk retry called again, never start two runs for it.
 * - `worker_executions.reused_from`: a step of a retry that was not run again but copied, with its
 *   result, from the failed execution's worker execution of that id.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('run_definitions', (t) => {
    t.text('sha256').primary();
    t.jsonb('definition').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.alterTable('workflow_executions', (t) => {
    t.text('definition_sha256').references('run_definitions.sha256');
    t.text('retry_of').references('workflow_executions.id');
    t.unique(['retry_of']);
    // The bulk retry's scan: a workflow's FAILED runs by start time.
    t.index(['account_id', 'workflow_id', 'run_status', 'created_at']);
  });
  await knex.schema.alterTable('worker_executions', (t) => {
    t.text('reused_from');
  });
}

export async function down(): Promise<void> {
  throw new Error('Migrations are forward-only in production.');
}
