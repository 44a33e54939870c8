import type { Knex } from 'knex';

/**
 * Payloads posted to webhook integrations (integrations themselves are entities of kind
 * `integration`). `body` is `json`, not `jsonb`: json keeps the text exactly as sent (key order,
 * duplicate keys, number spelling, white space), which is what the interface promises; it is still
 * validated as JSON and queryable. A payload belongs to its integration and goes with it: the
 * composite key reaches the entity row, whose kind is pinned to `integration`.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhook_payloads', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable();
    t.text('integration_kind').notNullable().defaultTo('integration');
    t.text('integration_id').notNullable();
    t.json('body').notNullable();
    t.integer('size').notNullable();
    t.timestamp('received_at', { useTz: true }).notNullable();
    t.foreign(['account_id', 'integration_kind', 'integration_id'])
      .references(['account_id', 'kind', 'id'])
      .inTable('entities')
      .onDelete('CASCADE');
    t.index(['account_id', 'integration_id', 'received_at']);
  });
  await knex.raw(
    `ALTER TABLE webhook_payloads ADD CONSTRAINT webhook_payloads_integration_kind CHECK (integration_kind = 'integration')`,
  );
}

export async function down(): Promise<void> {
  throw new Error('Migrations are forward-only in production.');
}
