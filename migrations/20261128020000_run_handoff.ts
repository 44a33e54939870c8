import type { Knex } from 'knex';

/**
 * Run starts handed to a worker (engine/workflows/run-handoff.ts). A run request that knows a worker
 * listens writes its outbox row with `handoff` set; the insert notifies channel `pas_run_start` with
 * the execution id when it commits, and a listening worker claims the row and starts the workflow
 * with Temporal's eager start, so the run's first workflow task comes back in the start's own answer
 * to that worker instead of through the task queue. No worker claims it within its short hold: the
 * API that wrote it starts it as before.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('workflow_run_outbox', (t) => {
    t.boolean('handoff').notNullable().defaultTo(false);
  });
  await knex.raw(`
    CREATE FUNCTION pas_notify_run_start() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('pas_run_start', NEW.execution_id);
      RETURN NULL;
    END
    $$`);
  await knex.raw(`
    CREATE TRIGGER workflow_run_outbox_notify_start
      AFTER INSERT ON workflow_run_outbox
      FOR EACH ROW
      WHEN (NEW.handoff)
      EXECUTE FUNCTION pas_notify_run_start()`);
}

export async function down(): Promise<void> {
  throw new Error('Migrations are forward-only in production.');
}
