import type { Knex } from 'knex';

/**
 * The SDK-call journal (workers/activities/sdk-journal.ts): one row per `sdk.<name>(...)` call of a
 * worker execution, numbered in call order, holding what the call answered. A retried activity
 * (its process died mid-script) runs the script again and answers each call that matches the
 * journal from it, so effects that already happened are not made twice.
 *
 * `result` is `json`, not `jsonb`: a replayed answer keeps the key order the live call gave.
 * The rows belong to their worker execution and go with it (ON DELETE CASCADE).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('sdk_calls', (t) => {
    t.text('worker_execution_id').notNullable().references('worker_executions.id').onDelete('CASCADE');
    t.integer('seq').notNullable();
    t.text('name').notNullable();
    t.text('args_sha256').notNullable();
    /** What the call answered, as the script received it; null when `error` or not `replayable`. */
    t.json('result');
    /** Set when the call failed with a domain error: `{status, message}`; null on success. */
    t.jsonb('error');
    /** False for a read whose result was too large to keep: a replay reads again. */
    t.boolean('replayable').notNullable().defaultTo(true);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['worker_execution_id', 'seq']);
  });
}

export async function down(): Promise<void> {
  throw new Error('Migrations are forward-only in production.');
}
