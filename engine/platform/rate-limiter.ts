import type { Database } from './database';
import { runPrepared } from './prepared-statements';

export interface RateLimitState {
  allowed: number;
  remaining: number;
  /** Seconds until the current one-minute window ends. */
  resetSeconds: number;
  limited: boolean;
}

const WINDOW_MS = 60_000;

interface PendingWindow {
  bucket: string;
  windowStart: number;
  /** Each request's resolve, in arrival order: the i-th gets the i-th of the counts added. */
  waiters: Array<{ resolve: (count: number) => void; reject: (error: unknown) => void }>;
}

/** Charges gathered in this turn of the event loop, per database, written by one statement. */
const pendingCharges = new WeakMap<Database, Map<string, PendingWindow>>();

async function writeCharges(db: Database, batch: Map<string, PendingWindow>): Promise<void> {
  pendingCharges.delete(db);
  const windows = [...batch.values()];
  try {
    const rows = (await runPrepared(
      db,
      db.raw(
        `INSERT INTO rate_limit_windows (bucket, window_start, count)
         SELECT * FROM unnest(?::text[], ?::bigint[], ?::int[])
         ON CONFLICT (bucket, window_start) DO UPDATE SET count = rate_limit_windows.count + EXCLUDED.count
         RETURNING bucket, window_start, count`,
        [
          windows.map((w) => w.bucket),
          windows.map((w) => w.windowStart),
          windows.map((w) => w.waiters.length),
        ],
      ),
    )) as Array<{ bucket: string; window_start: number; count: number }>;
    const totals = new Map(
      rows.map((row) => [`${row.bucket}\0${Number(row.window_start)}`, Number(row.count)]),
    );
    for (const window of windows) {
      const total = totals.get(`${window.bucket}\0${window.windowStart}`) ?? window.waiters.length;
      const first = total - window.waiters.length + 1;
      window.waiters.forEach((waiter, i) => waiter.resolve(first + i));
    }
  } catch (error) {
    for (const window of windows) for (const waiter of window.waiters) waiter.reject(error);
  }
}

/**
 * Fixed one-minute windows counted in PostgreSQL, so every api replica shares one budget per
 * credential. The requests that arrive in one turn of the event loop are charged by a single upsert
 * (one row per window, incremented by how many asked), so the check costs at most one round trip
 * and, under load, far fewer statements than requests; each request still gets its own exact count.
 */
export async function consumeRateLimit(
  db: Database,
  bucket: string,
  limit: number,
  nowMs: number = Date.now(),
): Promise<RateLimitState> {
  const windowStart = Math.floor(nowMs / WINDOW_MS) * WINDOW_MS;
  let batch = pendingCharges.get(db);
  if (!batch) {
    const fresh = new Map<string, PendingWindow>();
    pendingCharges.set(db, fresh);
    batch = fresh;
    setImmediate(() => void writeCharges(db, fresh));
  }
  const key = `${bucket}\0${windowStart}`;
  let window = batch.get(key);
  if (!window) {
    window = { bucket, windowStart, waiters: [] };
    batch.set(key, window);
  }
  const pending = window;
  const count = await new Promise<number>((resolve, reject) => pending.waiters.push({ resolve, reject }));
  return {
    allowed: limit,
    remaining: Math.max(0, limit - count),
    resetSeconds: Math.max(1, Math.ceil((windowStart + WINDOW_MS - nowMs) / 1000)),
    limited: count > limit,
  };
}

/** Housekeeping: windows older than the previous minute can never be read again. */
export async function pruneRateLimitWindows(db: Database, nowMs: number = Date.now()): Promise<number> {
  const cutoff = Math.floor(nowMs / WINDOW_MS) * WINDOW_MS - WINDOW_MS;
  return db('rate_limit_windows').where('window_start', '<', cutoff).delete();
}
