import type { Knex } from 'knex';

/**
 * The service's own account, which owns the built-in worker templates (plugins/builtin/). Every
 * account reads them; only the service writes them, at start. The row is marked `is_system` so
 * the account lists, the first-start owner check and the CLI's account choice never count it. It
 * has no users and no credentials, so nobody can sign in as it. The id is repeated in
 * engine/worker-templates/builtin-templates.ts (migrations are self-contained).
 */
const SYSTEM_ACCOUNT_ID = 'acct_ServiceBuiltinTemplates00';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('accounts', (t) => {
    t.boolean('is_system').notNullable().defaultTo(false);
  });
  await knex('accounts')
    .insert({ id: SYSTEM_ACCOUNT_ID, name: 'Built-in worker templates', is_system: true })
    .onConflict('id')
    .ignore();
}

export async function down(): Promise<void> {
  throw new Error('Migrations are forward-only in production.');
}
