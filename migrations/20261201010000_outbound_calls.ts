import type { Knex } from 'knex';

/**
 * Outbound calls of workflow scripts (engine/integrations/): each run counts its HTTP requests and
 * e-mails against a budget (`egress_calls`, taken one statement per call, so every step and worker
 * of a run shares it), and a run that ends FAILED with an `on_failure` alert gets one row in
 * `run_alerts`, written in the transaction that ends the run, which the workers' alert dispatcher
 * claims (a lease, so a worker killed mid-alert leaves it to another) and marks SENT or FAILED.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('workflow_executions', (t) => {
    t.integer('egress_calls').notNullable().defaultTo(0);
  });
  await knex.schema.createTable('run_alerts', (t) => {
    t.text('execution_id').primary().references('id').inTable('workflow_executions').onDelete('CASCADE');
    t.text('account_id').notNullable();
    t.jsonb('target').notNullable();
    t.text('status').notNullable().defaultTo('PENDING');
    t.integer('attempts').notNullable().defaultTo(0);
    t.timestamp('lease_until', { useTz: true });
    t.jsonb('detail');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
  });
  await knex.raw(
    `ALTER TABLE run_alerts ADD CONSTRAINT run_alerts_status CHECK (status IN ('PENDING', 'SENDING', 'SENT', 'FAILED'))`,
  );
  await knex.raw(
    `CREATE INDEX run_alerts_due ON run_alerts (updated_at) WHERE status IN ('PENDING', 'SENDING')`,
  );
  await knex.raw(`
    CREATE FUNCTION pas_notify_run_alert() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('pas_run_alert', NEW.execution_id);
      RETURN NULL;
    END
    $$`);
  await knex.raw(`
    CREATE TRIGGER run_alerts_notify
      AFTER INSERT ON run_alerts
      FOR EACH ROW
      EXECUTE FUNCTION pas_notify_run_alert()`);
  await knex.raw(ALERT_ON_FAILURE);
  await knex.raw(`
    CREATE TRIGGER workflow_executions_failed_alert
      AFTER UPDATE OF run_status ON workflow_executions
      FOR EACH ROW
      WHEN (NEW.run_status = 'FAILED' AND OLD.run_status IS DISTINCT FROM 'FAILED')
      EXECUTE FUNCTION pas_run_failed_alert()`);
  await knex.raw(`
    CREATE TRIGGER workflow_executions_failed_alert_on_insert
      AFTER INSERT ON workflow_executions
      FOR EACH ROW
      WHEN (NEW.run_status = 'FAILED')
      EXECUTE FUNCTION pas_run_failed_alert()`);
}

/**
 * The alert row is written by the database itself, in the statement that makes a run FAILED
 * (whichever path does: the interpreter, an ENDER, a restore settling interrupted runs), from the
 * workflow's `on_failure` at that moment; the primary key makes it once per run.
 */
export const ALERT_ON_FAILURE = `
  CREATE FUNCTION pas_run_failed_alert() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    INSERT INTO run_alerts (execution_id, account_id, target, status, created_at, updated_at)
    SELECT NEW.id, NEW.account_id, e.body->'on_failure', 'PENDING', now(), now()
      FROM entities e
     WHERE e.account_id = NEW.account_id AND e.kind = 'workflow' AND e.id = NEW.workflow_id
       AND jsonb_typeof(e.body->'on_failure') = 'object'
    ON CONFLICT (execution_id) DO NOTHING;
    RETURN NULL;
  END
  $$`;

export async function down(): Promise<void> {
  throw new Error('Migrations are forward-only in production.');
}
