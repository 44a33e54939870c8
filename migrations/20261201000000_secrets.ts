import type { Knex } from 'knex';

/**
 * Secrets (engine/secrets/): a name per account and workspace, and the value sealed by envelope
 * encryption. `ciphertext` is the value under the secret's own data key, `wrapped_key` that data key
 * under the master key `key_id` names; neither opens without the master key, which is never stored
 * in the database (so a backup of it holds no value in the clear).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('secrets', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable();
    t.text('workspace').notNullable();
    t.text('name').notNullable();
    t.text('description');
    t.integer('version').notNullable().defaultTo(1);
    t.text('key_id').notNullable();
    t.binary('wrapped_key').notNullable();
    t.binary('ciphertext').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.unique(['account_id', 'workspace', 'name']);
    t.index(['account_id', 'workspace', 'created_at', 'id']);
    // `pas secrets rotate-key` finds what is still under an old key.
    t.index(['key_id']);
  });
}

export async function down(): Promise<void> {
  throw new Error('Migrations are forward-only in production.');
}
