import type { Knex } from 'knex';

/**
 * A run that leaves RUNNING notifies channel `pas_run_ended` with its execution id when its
 * transaction commits, whichever process closed it (the worker's ENDER, `finishRun`, an API
 * replica stopping it). API processes LISTEN, so a client waiting on the run
 * (`GET /v2/workflows/:id/workflow_executions?workflow_execution_id=…&wait_seconds=N`) hears of
 * it at once instead of polling (engine/workflows/run-end-waiter.ts).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE FUNCTION pas_notify_run_ended() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('pas_run_ended', NEW.id);
      RETURN NULL;
    END
    $$`);
  await knex.raw(`
    CREATE TRIGGER workflow_executions_notify_run_ended
      AFTER UPDATE OF run_status ON workflow_executions
      FOR EACH ROW
      WHEN (OLD.run_status = 'RUNNING' AND NEW.run_status IS DISTINCT FROM 'RUNNING')
      EXECUTE FUNCTION pas_notify_run_ended()`);
}

export async function down(): Promise<void> {
  throw new Error('Migrations are forward-only in production.');
}
