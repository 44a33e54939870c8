import type { Knex } from 'knex';

/**
 * API processes cache resolved credentials (engine/identity/credential-cache.ts). Any change to what
 * a credential resolves to (a key or client revoked, a user disabled or given other permissions, a
 * token removed), from any process (an API replica, the `pas` CLI, psql), notifies channel
 * `pas_credentials` when its transaction commits, and every listening process drops its cache.
 * Statement-level triggers: one notification per statement, however many rows it touched.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE FUNCTION pas_notify_credentials() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('pas_credentials', TG_TABLE_NAME);
      RETURN NULL;
    END
    $$`);
  for (const table of ['api_keys', 'oauth_clients', 'oauth_access_tokens', 'users']) {
    await knex.raw(
      `CREATE TRIGGER ${table}_notify_credentials AFTER UPDATE OR DELETE OR TRUNCATE ON ${table}
       FOR EACH STATEMENT EXECUTE FUNCTION pas_notify_credentials()`,
    );
  }
}

export async function down(): Promise<void> {
  throw new Error('Migrations are forward-only in production.');
}
