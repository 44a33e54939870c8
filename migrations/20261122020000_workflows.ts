import type { Knex } from 'knex';

/**
 * Workflows move into the generic `entities` table (kind `workflow`, the definition and trigger
 * settings in `body`), so their lists get the query language and keyset paging every other kind
 * has. Executions stay in their own tables; they now also record who started a run, because a
 * worker's SDK calls act (and are audited) on that person's behalf.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    INSERT INTO entities (account_id, kind, id, workspace, name, description, tags, link_uid, date,
                          body, created_at, updated_at, version)
    SELECT account_id, 'workflow', id, workspace, name, description, tags, NULL, NULL,
           jsonb_build_object(
             'status', status,
             'trigger_type', trigger_type,
             'trigger_config', trigger_config,
             'trigger_enabled', trigger_enabled,
             'starter_worker_id', starter_worker_id,
             'gui', coalesce(gui, '{"offset_x": 0, "offset_y": 0, "zoom": 1}'::jsonb),
             'workers', workers),
           created_at, updated_at, version
    FROM workflows
  `);
  await knex.schema.dropTable('workflows');

  await knex.schema.alterTable('workflow_executions', (t) => {
    t.text('user_id');
    t.text('credential_id');
    t.text('credential_type');
  });
  // The executions list filters on a worker (`worker_id`): find the runs that ran it.
  await knex.schema.alterTable('worker_executions', (t) => {
    t.index(['account_id', 'worker_id']);
  });
}

export async function down(): Promise<void> {
  throw new Error('Migrations are forward-only in production.');
}
