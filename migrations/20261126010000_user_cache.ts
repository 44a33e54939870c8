import type { Knex } from 'knex';

/**
 * The SDK layer's UserCache and UserLock (POST /v1/sdk_function), per account: a key's JSON value
 * with an expiry, and a named lock held by a token until it is released or expires. Expired rows
 * are treated as absent on every read and replaced on write; nothing else removes them.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('user_cache', (t) => {
    t.text('account_id').notNullable().references('accounts.id');
    t.text('key').notNullable();
    t.jsonb('value').notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.primary(['account_id', 'key']);
  });
  await knex.schema.createTable('user_locks', (t) => {
    t.text('account_id').notNullable().references('accounts.id');
    t.text('name').notNullable();
    t.text('token').notNullable();
    t.timestamp('acquired_at', { useTz: true }).notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.primary(['account_id', 'name']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('user_locks');
  await knex.schema.dropTable('user_cache');
}
