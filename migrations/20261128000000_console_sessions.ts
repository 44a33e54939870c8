import type { Knex } from 'knex';

/**
 * Web console sessions (api/console): one row per signed-in browser. The cookie carries a random
 * token; only its SHA-256 is stored. A session stands on the credential it was opened with (an API
 * key's SID or an OAuth client): revoking that credential, or disabling the user, ends it. It ends
 * after `idle` without a request, at `expires_at` whatever happens, or at sign-out (row deleted).
 * Also: run and step changes notified for the console's live views, and an index for the
 * account-wide runs list it pages through.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('console_sessions', (t) => {
    t.text('token_hash').primary();
    t.text('account_id').notNullable().references('accounts.id');
    t.text('user_id').notNullable();
    t.text('credential_type').notNullable();
    t.text('credential_id').notNullable();
    t.text('csrf_token').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('last_seen_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.index(['expires_at']);
  });
  // A run or one of its steps that starts or changes status notifies `pas_run_changes` with
  // "<account id> <execution id>" when its transaction commits: the console's live views
  // (GET /console/events) hear of it at once.
  await knex.raw(`
    CREATE FUNCTION pas_notify_run_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('pas_run_changes', NEW.account_id || ' ' || NEW.id);
      RETURN NULL;
    END
    $$`);
  await knex.raw(`
    CREATE FUNCTION pas_notify_step_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('pas_run_changes', NEW.account_id || ' ' || NEW.workflow_execution_id);
      RETURN NULL;
    END
    $$`);
  await knex.raw(`
    CREATE TRIGGER workflow_executions_notify_changed
      AFTER INSERT OR UPDATE OF run_status ON workflow_executions
      FOR EACH ROW EXECUTE FUNCTION pas_notify_run_changed()`);
  await knex.raw(`
    CREATE TRIGGER worker_executions_notify_changed
      AFTER INSERT OR UPDATE OF status ON worker_executions
      FOR EACH ROW EXECUTE FUNCTION pas_notify_step_changed()`);
  // The console's runs list pages a whole workspace (GET /v2/workflow_executions).
  await knex.schema.alterTable('workflow_executions', (t) => {
    t.index(['account_id', 'workspace', 'created_at'], 'workflow_executions_workspace_created');
  });
}

export async function down(): Promise<void> {
  throw new Error('Migrations are forward-only in production.');
}
