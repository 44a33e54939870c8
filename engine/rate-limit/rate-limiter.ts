import type { Database } from '../db/database';

export interface RateLimitState {
  allowed: number;
  remaining: number;
  /** Seconds until the current one-minute window ends. */
  resetSeconds: number;
  limited: boolean;
}

const WINDOW_MS = 60_000;

/**
 * Fixed one-minute windows counted in PostgreSQL, so every api replica shares one budget per
 * credential. One upsert per request; the counter row is tiny and hot, which PostgreSQL handles well.
 */
export async function consumeRateLimit(
  db: Database,
  bucket: string,
  limit: number,
  nowMs: number = Date.now(),
): Promise<RateLimitState> {
  const windowStart = Math.floor(nowMs / WINDOW_MS) * WINDOW_MS;
  const result = await db.raw<{ rows: Array<{ count: number }> }>(
    `INSERT INTO rate_limit_windows (bucket, window_start, count) VALUES (?, ?, 1)
     ON CONFLICT (bucket, window_start) DO UPDATE SET count = rate_limit_windows.count + 1
     RETURNING count`,
    [bucket, windowStart],
  );
  const count = Number(result.rows[0]?.count ?? 1);
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
