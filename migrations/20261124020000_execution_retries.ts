import type { Knex } from 'knex';

/**
 * Re-running a failed execution from its failed step (POST .../workflow_executions/:id/retry).
 *
 * - `workflow_executions.definition`: the workers and plan the run was started with, so a retry runs
 *   the same definition version even after the workflow was edited (Temporal keeps it too, in the
 *   start event, but only for the namespace's retention period). Null for runs recorded before.
 * - `workflow_executions.retry_of`: the failed execution a retry re-runs. Unique: a failed
 *   execution is retried once (retry the retry if that fails too), so two retry requests racing,
 *   or a bulk retry called again, never start two runs for it.
 * - `worker_executions.reused_from`: a step of a retry that was not run again but copied, with its
 *   result, from the failed execution's worker execution of that id.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('workflow_executions', (t) => {
    t.jsonb('definition');
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
