import type { Knex } from 'knex';

/**
 * Accounts, credentials, workspaces, the immutable audit trail, the shared rate-limit counters
 * and the workflow tables the walking skeleton needs. Timestamps are timestamptz; the API turns
 * them into epoch seconds.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('accounts', (t) => {
    t.text('id').primary();
    t.text('name').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  await knex.schema.createTable('users', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable().references('accounts.id');
    t.text('email').notNullable().unique();
    t.text('name').notNullable();
    t.boolean('is_owner').notNullable().defaultTo(false);
    t.specificType('permissions', 'text[]').notNullable().defaultTo('{}');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('disabled_at', { useTz: true });
    t.index(['account_id']);
  });

  // Tokens are stored as SHA-256 digests: they are 256-bit random secrets, so a slow KDF adds
  // nothing, and a leaked table gives no usable credential.
  await knex.schema.createTable('api_keys', (t) => {
    t.text('sid').primary();
    t.text('account_id').notNullable().references('accounts.id');
    t.text('user_id').notNullable().references('users.id');
    t.text('token_hash').notNullable().unique();
    t.text('description');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('revoked_at', { useTz: true });
    t.timestamp('last_used_at', { useTz: true });
    t.index(['account_id']);
  });

  await knex.schema.createTable('oauth_clients', (t) => {
    t.text('client_id').primary();
    t.text('account_id').notNullable().references('accounts.id');
    t.text('user_id').notNullable().references('users.id');
    t.text('secret_hash').notNullable();
    t.text('name').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('revoked_at', { useTz: true });
  });

  await knex.schema.createTable('oauth_access_tokens', (t) => {
    t.text('token_hash').primary();
    t.text('client_id').notNullable().references('oauth_clients.client_id');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.index(['expires_at']);
  });

  // One row per credential and minute; shared by every api replica.
  await knex.schema.createTable('rate_limit_windows', (t) => {
    t.text('bucket').notNullable();
    t.bigInteger('window_start').notNullable();
    t.integer('count').notNullable();
    t.primary(['bucket', 'window_start']);
  });

  await knex.schema.createTable('workspaces', (t) => {
    t.text('account_id').notNullable().references('accounts.id');
    t.text('name').notNullable();
    t.text('description');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.integer('version').notNullable().defaultTo(1);
    t.primary(['account_id', 'name']);
    t.index(['account_id', 'created_at']);
  });

  await knex.schema.createTable('audit_logs', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable().references('accounts.id');
    t.text('user_id');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.text('activity').notNullable();
    t.text('operation').notNullable();
    t.text('source').notNullable();
    t.text('status').notNullable();
    t.text('entity_id');
    t.text('entity_type');
    t.text('entity_name');
    t.text('workspace');
    t.text('workflow_id');
    t.text('workflow_name');
    t.text('workflow_execution_id');
    t.text('user_email');
    t.text('proxy_admin_email');
    t.text('credential_id');
    t.text('credential_type');
    t.text('ip');
    t.text('user_agent');
    t.text('user_agent_pretty');
    t.jsonb('location');
    t.jsonb('viewed_ids');
    t.jsonb('before');
    t.jsonb('after');
    t.index(['account_id', 'created_at']);
    t.index(['account_id', 'user_id', 'created_at']);
  });
  // Records are immutable: the database itself refuses UPDATE and DELETE, whatever the code does.
  await knex.raw(`
    CREATE FUNCTION audit_logs_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'audit log records are immutable';
    END $$;
    CREATE TRIGGER audit_logs_no_update BEFORE UPDATE OR DELETE ON audit_logs
      FOR EACH ROW EXECUTE FUNCTION audit_logs_immutable();
    CREATE TRIGGER audit_logs_no_truncate BEFORE TRUNCATE ON audit_logs
      FOR EACH STATEMENT EXECUTE FUNCTION audit_logs_immutable();
  `);

  await knex.schema.createTable('worker_templates', (t) => {
    t.text('id').primary();
    // Null for the built-in templates every account sees.
    t.text('account_id').references('accounts.id');
    t.text('name').notNullable();
    t.text('description');
    t.specificType('tags', 'text[]').notNullable().defaultTo('{}');
    t.text('category');
    t.boolean('visible').notNullable().defaultTo(true);
    t.text('type').notNullable();
    t.text('script_runtime').notNullable();
    t.text('script_entry_point').notNullable().defaultTo('main');
    t.text('script_source').notNullable();
    t.jsonb('form_inputs').notNullable().defaultTo('[]');
    t.boolean('run_locally').notNullable().defaultTo(true);
    t.text('container_status').notNullable().defaultTo('SUCCESS');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.integer('version').notNullable().defaultTo(1);
  });

  await knex.schema.createTable('workflows', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable().references('accounts.id');
    t.text('workspace').notNullable();
    t.text('name').notNullable();
    t.text('description');
    t.specificType('tags', 'text[]').notNullable().defaultTo('{}');
    t.text('status').notNullable().defaultTo('OK');
    t.text('trigger_type').notNullable().defaultTo('MANUAL');
    t.jsonb('trigger_config').notNullable().defaultTo('{}');
    t.boolean('trigger_enabled').notNullable().defaultTo(false);
    t.text('starter_worker_id');
    t.jsonb('gui');
    t.jsonb('workers').notNullable().defaultTo('[]');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.integer('version').notNullable().defaultTo(1);
    t.index(['account_id', 'workspace', 'created_at']);
  });

  await knex.schema.createTable('workflow_executions', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable().references('accounts.id');
    t.text('workflow_id').notNullable();
    t.text('workflow_name').notNullable();
    t.text('workspace').notNullable();
    t.text('trigger').notNullable();
    t.text('run_status').notNullable();
    t.text('started_worker_id');
    t.text('ender_worker_id');
    t.text('ender_worker_execution_id');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.timestamp('started_at', { useTz: true });
    t.timestamp('ended_at', { useTz: true });
    t.double('duration');
    t.double('real_execution_time');
    t.double('total_execution_time');
    t.jsonb('resume');
    t.jsonb('parameters').notNullable().defaultTo('{}');
    t.integer('version').notNullable().defaultTo(1);
    t.index(['account_id', 'workflow_id', 'created_at']);
  });

  await knex.schema.createTable('worker_executions', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable().references('accounts.id');
    t.text('workflow_execution_id').notNullable().references('workflow_executions.id');
    t.text('workflow_id').notNullable();
    t.text('workflow_name').notNullable();
    t.text('worker_id').notNullable();
    t.text('worker_name').notNullable();
    t.text('worker_type').notNullable();
    t.text('trigger').notNullable();
    t.text('status').notNullable();
    t.integer('parallel_index').notNullable().defaultTo(-1);
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.timestamp('started_at', { useTz: true });
    t.timestamp('ended_at', { useTz: true });
    t.double('duration');
    t.double('cpu_time');
    t.jsonb('result');
    t.jsonb('input_params');
    t.jsonb('logs');
    t.text('error_message');
    t.integer('version').notNullable().defaultTo(1);
    // One row per worker and branch of an execution: a retried activity finds its own row.
    t.unique(['workflow_execution_id', 'worker_id', 'parallel_index']);
  });
}

export async function down(): Promise<void> {
  throw new Error('Migrations are forward-only in production.');
}
