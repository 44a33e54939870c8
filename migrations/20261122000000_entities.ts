import type { Knex } from 'knex';

/**
 * One document table for every stored resource (portfolios, datastores, reports, report templates,
 * custom indexes, private securities, worker templates, user apps). The common fields are columns,
 * so lists, the query language and keyset paging share one implementation; the rest of each
 * resource lives in `body`. Account-scoped kinds have a null workspace.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('entities', (t) => {
    t.text('account_id').notNullable().references('accounts.id');
    t.text('kind').notNullable();
    t.text('id').notNullable();
    t.text('workspace');
    t.text('name').notNullable();
    t.text('description');
    t.specificType('tags', 'text[]').notNullable().defaultTo('{}');
    t.text('link_uid');
    t.text('date');
    t.jsonb('body').notNullable().defaultTo('{}');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.integer('version').notNullable().defaultTo(1);
    t.primary(['account_id', 'kind', 'id']);
    t.index(['account_id', 'kind', 'workspace', 'created_at']);
    t.index(['account_id', 'kind', 'updated_at']);
    t.index(['account_id', 'link_uid']);
  });
  await knex.raw('CREATE INDEX entities_tags ON entities USING gin (tags)');
  // The securities master: what the service knows about a symbol (names fill in portfolio
  // securities; the calculation engine adds prices and attributes).
  await knex.schema.createTable('securities_master', (t) => {
    t.text('symbol').primary();
    t.text('name');
    t.text('currency');
    t.text('instrument_type');
    t.text('exchange');
    t.text('country');
    t.text('sector');
    t.jsonb('attributes').notNullable().defaultTo('{}');
  });
  // Share links of reports: the token is shown once, only its digest is kept.
  await knex.schema.createTable('report_shares', (t) => {
    t.text('token_hash').primary();
    t.text('account_id').notNullable().references('accounts.id');
    t.text('report_id').notNullable();
    t.text('skin_theme').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.index(['expires_at']);
  });
  // The skeleton's template table is superseded by entities of kind worker_template; it never held data.
  await knex.schema.dropTable('worker_templates');
}

export async function down(): Promise<void> {
  throw new Error('Migrations are forward-only in production.');
}
