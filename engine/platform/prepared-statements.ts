import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import type { Database } from './database';

const MAX_PREPARED_PER_CONNECTION = 100;
const preparedByConnection = new WeakMap<object, Set<string>>();

/**
 * Runs a statement of the hot path as a named prepared statement on a pooled connection, so
 * PostgreSQL parses and plans it once per connection rather than on every request. Its name is
 * its text's digest, so each connection prepares each shape once. Inside a transaction it runs there.
 */
export async function runPrepared(db: Database, statement: Knex.Raw): Promise<unknown[]> {
  if (db.isTransaction) return ((await statement) as { rows: unknown[] }).rows;
  const { sql, bindings } = statement.toSQL().toNative();
  return runPreparedSql(db, sql, bindings);
}

const names = new Map<string, string>();

/**
 * `runPrepared` for a statement already in PostgreSQL's form (`$1`, …; values as `pg` takes them,
 * arrays as arrays), outside any transaction: the hot path's fixed statements skip knex's compiler.
 */
export async function runPreparedSql(
  db: Database,
  sql: string,
  bindings: readonly unknown[],
): Promise<unknown[]> {
  let name = names.get(sql);
  if (name === undefined) {
    name = 'pas_' + createHash('sha1').update(sql).digest('hex').slice(0, 24);
    if (names.size < 10_000) names.set(sql, name);
  }
  // As knex does for its own queries, so query listeners (debug logs, tests) still see it.
  db.client.emit('query', { method: 'raw', sql, bindings });
  const connection = (await db.client.acquireConnection()) as {
    query(config: { name: string; text: string; values: readonly unknown[] }): Promise<{ rows: unknown[] }>;
  };
  try {
    // Lists with ad-hoc filters have many shapes: past a bound a connection prepares no more.
    let prepared = preparedByConnection.get(connection);
    if (!prepared) preparedByConnection.set(connection, (prepared = new Set()));
    if (prepared.has(name) || prepared.size < MAX_PREPARED_PER_CONNECTION) {
      prepared.add(name);
      return (await connection.query({ name, text: sql, values: bindings })).rows;
    }
    return (await connection.query({ text: sql, values: bindings } as never)).rows;
  } finally {
    await db.client.releaseConnection(connection);
  }
}
