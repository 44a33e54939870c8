import { randomUUID } from 'node:crypto';
import type { Database } from '../platform/database';
import { InvalidInput } from '../platform/errors';
import { isPlainObject } from '../platform/plain-object';
import { NotOffered } from './sdk-entities';

/**
 * everysk-lib's UserCache and UserLock on PostgreSQL (tables user_cache and user_locks), each row
 * the account's own: another account's keys and locks are out of reach by construction. A value is
 * kept as the client sent it on the wire (its dates stay dates when read back). An expired row is
 * absent for every read and is replaced by the next write.
 */

/** everysk-lib's ENGINES_CACHE_EXECUTION_EXPIRATION_TIME: the longest (and default) life of a key. */
export const CACHE_TIMEOUT_MAX = 14_400;
export const CACHE_KEYS_MAX = 1000;
export const CACHE_KEY_MAX_LENGTH = 250;
/** everysk-lib's USER_CACHE_LOCK_{MIN,MAX}_EXPIRATION_TIME and its default. */
export const LOCK_TIMEOUT_MIN = 0.01;
export const LOCK_TIMEOUT_MAX = 60;
export const LOCK_TIMEOUT_DEFAULT = 10;
/** The longest an acquire waits for a held lock (below common proxy timeouts). */
export const LOCK_WAIT_MAX = 30;

function key(value: unknown, prefix: string, what = 'key'): string {
  if (typeof value !== 'string' || value === '' || value.length > CACHE_KEY_MAX_LENGTH) {
    throw new InvalidInput(`${what} must be a string of 1 to ${CACHE_KEY_MAX_LENGTH} characters.`);
  }
  if (value.includes('\u0000')) throw new InvalidInput(`${what} holds a NUL character.`);
  return prefix + value;
}

function keys(value: unknown, prefix: string): string[] {
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list) || list.length > CACHE_KEYS_MAX) {
    throw new InvalidInput(`keys must be a list of at most ${CACHE_KEYS_MAX} keys.`);
  }
  return list.map((item, i) => key(item, prefix, `keys[${i}]`));
}

function timeout(value: unknown): number {
  if (value === undefined || value === null) return CACHE_TIMEOUT_MAX;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > CACHE_TIMEOUT_MAX) {
    throw new InvalidInput(`timeout must be a whole number of seconds from 1 to ${CACHE_TIMEOUT_MAX}.`);
  }
  return value;
}

function prefixOf(self: unknown): string {
  const prefix = isPlainObject(self) ? self.prefix : undefined;
  if (prefix === undefined || prefix === null) return '';
  if (typeof prefix !== 'string' || prefix.length > 100)
    throw new InvalidInput('prefix must be a string of at most 100 characters.');
  return prefix;
}

const live = (db: Database) => db.raw('expires_at > now()');

async function put(db: Database, accountId: string, k: string, value: unknown, seconds: number) {
  await db('user_cache')
    .insert({
      account_id: accountId,
      key: k,
      value: JSON.stringify(value ?? null),
      expires_at: db.raw(`now() + make_interval(secs => ?)`, [seconds]),
    })
    .onConflict(['account_id', 'key'])
    .merge();
}

async function counter(
  db: Database,
  accountId: string,
  k: string,
  delta: unknown,
  initial: unknown,
  seconds: number,
  sign: 1 | -1,
): Promise<number | null> {
  if (typeof delta !== 'number' || !Number.isInteger(delta) || delta < 0) {
    throw new InvalidInput('delta must be a whole number of 0 or more.');
  }
  if (
    initial !== undefined &&
    initial !== null &&
    (typeof initial !== 'number' || !Number.isInteger(initial))
  ) {
    throw new InvalidInput('initial_value must be a whole number, or null.');
  }
  return db.transaction(async (trx) => {
    const row = (await trx('user_cache')
      .where({ account_id: accountId, key: k })
      .where(live(trx))
      .forUpdate()
      .first('value')) as { value: unknown } | undefined;
    let current: number;
    if (row === undefined) {
      if (initial === undefined || initial === null) return null;
      current = initial as number;
    } else {
      if (typeof row.value !== 'number' || !Number.isInteger(row.value)) {
        throw new InvalidInput(`The value of ${k} is not a whole number: it cannot be counted.`);
      }
      current = row.value;
    }
    const next = current + sign * delta;
    if (!Number.isSafeInteger(next))
      throw new InvalidInput('The counter would leave the safe integer range.');
    await put(trx as unknown as Database, accountId, k, next, seconds);
    return next;
  });
}

/** UserCache.<method>, with the params as sent (`raw`: values kept in their wire form). */
export async function cacheMethod(
  db: Database,
  accountId: string,
  method: string,
  self: unknown,
  params: Record<string, unknown>,
  raw: Record<string, unknown>,
): Promise<unknown> {
  const prefix = prefixOf(self);
  const values = (ks: string[]) =>
    db('user_cache')
      .where({ account_id: accountId })
      .whereIn('key', ks)
      .where(live(db))
      .select('key', 'value') as Promise<Array<{ key: string; value: unknown }>>;
  switch (method) {
    case 'get': {
      const [row] = await values([key(params.key, prefix)]);
      return row === undefined ? null : row.value;
    }
    case 'get_multi': {
      const ks = keys(params.keys, prefix);
      const rows = await values(ks);
      return Object.fromEntries(rows.map((row) => [row.key.slice(prefix.length), row.value]));
    }
    case 'set': {
      const k = key(params.key, prefix);
      await put(db, accountId, k, raw.value, timeout(params.timeout));
      return true;
    }
    case 'set_multi': {
      const data = raw.data_dict;
      if (!isPlainObject(data) || Object.keys(data).length > CACHE_KEYS_MAX) {
        throw new InvalidInput(`data_dict must be an object of at most ${CACHE_KEYS_MAX} keys.`);
      }
      const seconds = timeout(params.timeout);
      const entries = Object.entries(data).map(
        ([k, v], i) => [key(k, prefix, `data_dict key ${i}`), v] as const,
      );
      await db.transaction(async (trx) => {
        for (const [k, v] of entries) await put(trx as unknown as Database, accountId, k, v, seconds);
      });
      // memcache's set_multi answers the keys it could not store: none.
      return [];
    }
    case 'incr':
    case 'decr':
      return counter(
        db,
        accountId,
        key(params.key, prefix),
        params.delta ?? 1,
        params.initial_value,
        timeout(params.timeout),
        method === 'incr' ? 1 : -1,
      );
    case 'delete':
    case 'delete_multi': {
      const ks =
        method === 'delete' && typeof params.key === 'string'
          ? [key(params.key, prefix)]
          : keys(params.key ?? params.keys, prefix);
      const deleted = await db('user_cache').where({ account_id: accountId }).whereIn('key', ks).delete();
      return method === 'delete' ? deleted > 0 : true;
    }
  }
  throw new NotOffered('UserCache', method);
}

// --------------------------------------------------------------------------------------------------
// UserLock

interface LockSelf {
  name: string;
  token: string | null;
  timeout: number;
  blocking: boolean;
}

function lockSelf(self: unknown): LockSelf {
  if (!isPlainObject(self)) throw new InvalidInput('UserLock needs its self_obj.');
  const name = self.name;
  if (typeof name !== 'string' || name === '' || name.length > CACHE_KEY_MAX_LENGTH) {
    throw new InvalidInput(`name must be a string of 1 to ${CACHE_KEY_MAX_LENGTH} characters.`);
  }
  const t = self.timeout ?? LOCK_TIMEOUT_DEFAULT;
  if (typeof t !== 'number' || !(t >= LOCK_TIMEOUT_MIN && t <= LOCK_TIMEOUT_MAX)) {
    throw new InvalidInput(`timeout must be from ${LOCK_TIMEOUT_MIN} to ${LOCK_TIMEOUT_MAX} seconds.`);
  }
  const token = self.token ?? null;
  if (token !== null && (typeof token !== 'string' || token === '' || token.length > 200)) {
    throw new InvalidInput('token must be a string of 1 to 200 characters.');
  }
  return { name, token, timeout: t, blocking: self.blocking !== false };
}

/** One attempt: the lock is taken when free, expired, or already held by the same token. */
async function tryAcquire(db: Database, accountId: string, lock: LockSelf, token: string): Promise<boolean> {
  const result = await db.raw(
    `INSERT INTO user_locks (account_id, name, token, acquired_at, expires_at)
     VALUES (?, ?, ?, now(), now() + make_interval(secs => ?))
     ON CONFLICT (account_id, name) DO UPDATE
       SET token = EXCLUDED.token, acquired_at = EXCLUDED.acquired_at, expires_at = EXCLUDED.expires_at
       WHERE user_locks.expires_at <= now() OR user_locks.token = EXCLUDED.token
     RETURNING token`,
    [accountId, lock.name, token, lock.timeout],
  );
  return (result as { rows: unknown[] }).rows.length === 1;
}

async function release(db: Database, accountId: string, name: string, token: string | null, force: boolean) {
  const q = db('user_locks').where({ account_id: accountId, name }).where(live(db));
  if (!force) q.where({ token });
  const released = await q.delete();
  if (released === 0 && !force) {
    throw new InvalidInput(`The lock ${name} is not held with this token: it was not released.`);
  }
  return null;
}

export async function lockMethod(
  db: Database,
  accountId: string,
  method: string,
  self: unknown,
  params: Record<string, unknown>,
): Promise<unknown> {
  const lock = lockSelf(self);
  switch (method) {
    case 'acquire': {
      const token =
        typeof params.token === 'string' && params.token !== '' ? params.token : (lock.token ?? randomUUID());
      const blocking = typeof params.blocking === 'boolean' ? params.blocking : lock.blocking;
      const wait = params.blocking_timeout;
      if (wait !== undefined && wait !== null && (typeof wait !== 'number' || wait < 0)) {
        throw new InvalidInput('blocking_timeout must be a number of seconds of 0 or more.');
      }
      const deadline =
        Date.now() +
        1000 * Math.min(LOCK_WAIT_MAX, blocking ? ((wait as number | null) ?? LOCK_WAIT_MAX) : 0);
      for (;;) {
        if (await tryAcquire(db, accountId, lock, token)) return true;
        if (Date.now() >= deadline) return false;
        await new Promise((resolve) =>
          setTimeout(resolve, Math.min(100, Math.max(5, deadline - Date.now()))),
        );
      }
    }
    case 'release':
      return release(db, accountId, lock.name, lock.token, params.force === true);
    case 'do_release': {
      const expected = params.expected_token;
      if (typeof expected !== 'string' || expected === '')
        throw new InvalidInput('expected_token must be a string.');
      return release(db, accountId, lock.name, expected, false);
    }
    case 'get_lock_info': {
      const row = (await db('user_locks')
        .where({ account_id: accountId, name: lock.name })
        .where(live(db))
        .first(db.raw('extract(epoch from (expires_at - now()))::float8 AS ttl'))) as
        { ttl: number } | undefined;
      return { locked: row !== undefined, name: lock.name, ...(row ? { expires_in: row.ttl } : {}) };
    }
  }
  throw new NotOffered('UserLock', method);
}
